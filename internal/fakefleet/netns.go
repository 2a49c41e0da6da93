package fakefleet

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/probectl/probectl/internal/dbtest"
)

// Namespace is what a test's own network namespace holds (see InNetworkNamespace).
type Namespace struct {
	// Decoys are addresses (host:port) the SSRF guard must refuse, such as a cloud metadata
	// endpoint. Each is given to the namespace's loopback interface, with a listener that counts
	// the connections it is offered, so that a guard that broke would reach a decoy here rather
	// than the real endpoint.
	Decoys []string
	// Database: the child makes its databases on this test binary's database server (dbtest's,
	// whichever it is: the throwaway cluster or PROBECTL_TEST_DATABASE_URL's, local or not). The
	// parent serves a Unix socket, which a network namespace does not cut off, and carries each
	// connection to it over TCP to the server; the child signs in with the URL's own user and
	// password, so the server's rules for TCP are the ones it meets.
	Database bool
}

// InNetworkNamespace runs the calling test again, alone, in a child process (this test binary)
// inside a network namespace of its own, where body runs: only loopback exists there, so nothing
// body sends can leave the machine whatever the code under test does, and the namespace's decoys
// stand where the refused endpoints would be. An SSRF test that goes through code whose dialer
// it cannot replace (a command, another package's client) runs this way instead of trusting the
// guard not to dial a real metadata address.
//
// body runs only in the child, once the child has checked that it is in a network namespace
// other than its parent's, holding loopback alone (it fails otherwise); the parent returns once
// the child has passed. Where no network namespace can be made (it takes unshare(1) and ip(8),
// from util-linux and iproute2, and CAP_SYS_ADMIN or unprivileged user namespaces) it skips
// loudly, naming what is missing, unless PROBECTL_REQUIRE_NETNS=1 (as .ci/run sets) makes that a
// failure.
func InNetworkNamespace(t *testing.T, ns Namespace, body func(t *testing.T, decoys *Decoys)) {
	t.Helper()
	if os.Getenv(netnsChildEnv) == t.Name() {
		requireOwnNamespace(t)
		body(t, listenDecoys(t, ns.Decoys))
		return
	}
	unshare, why := unshareCommand()
	if why != "" {
		notRun(t, "runs in a network namespace of its own, so that nothing it sends can leave the machine, and "+why)
	}
	parentNS, err := os.Readlink(ownNetNS)
	if err != nil {
		t.Fatalf("fakefleet: this process's network namespace: %v", err)
	}
	script := []string{"ip link set lo up"}
	for _, d := range ns.Decoys {
		ap, err := netip.ParseAddrPort(d)
		if err != nil {
			t.Fatalf("fakefleet: decoy %q is not an address and port: %v", d, err)
		}
		script = append(script, fmt.Sprintf("ip addr add %s/%d dev lo", ap.Addr(), ap.Addr().BitLen()))
	}
	script = append(script, `exec "$0" "$@"`)

	// The child's own -test.timeout stops a hung body first, with its goroutines' stacks; the
	// context only stops a child that hangs past it.
	ctx, cancel := context.WithTimeout(t.Context(), childTimeout+time.Minute)
	defer cancel()
	args := slices.Concat(unshare[1:], []string{"sh", "-ec", strings.Join(script, " && "), os.Args[0],
		"-test.run=" + runPattern(t.Name()), "-test.count=1", "-test.v", "-test.timeout=" + childTimeout.String()})
	cmd := exec.CommandContext(ctx, unshare[0], args...)
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+t.Name(), netnsParentEnv+"="+parentNS)
	if ns.Database {
		cmd.Env = append(cmd.Env, dbtest.EnvURL+"="+proxyDatabase(t, dbtest.NewEmptyDB(t)))
	}
	cmd.SysProcAttr = childAttr()    // the child dies with this process
	cmd.WaitDelay = 10 * time.Second // a grandchild holding the output open does not hang Wait
	t.Logf("%s runs in a network namespace made by `%s`", t.Name(), strings.Join(unshare, " "))
	out, err := combinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s in its network namespace: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") || strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Fatalf("%s did not pass in its network namespace:\n%s", t.Name(), out)
	}
}

// childTimeout bounds the child's run (its -test.timeout).
const childTimeout = 5 * time.Minute

// ownNetNS names this process's network namespace (its link reads net:[inode]).
const ownNetNS = "/proc/self/ns/net"

// requireOwnNamespace fails the child unless it runs in a network namespace other than its
// parent's and that namespace holds loopback alone: a body run anywhere else could reach the
// real addresses its decoys stand for.
func requireOwnNamespace(t *testing.T) {
	t.Helper()
	parent := os.Getenv(netnsParentEnv)
	own, err := os.Readlink(ownNetNS)
	switch {
	case err != nil:
		t.Fatalf("fakefleet: %s runs as a network namespace's child, but its namespace cannot be read: %v", t.Name(), err)
	case parent == "" || own == parent:
		t.Fatalf("fakefleet: %s runs as a network namespace's child but is not in a network namespace of its own (%s, its parent's %q)", t.Name(), own, parent)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatalf("fakefleet: the namespace's interfaces: %v", err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 {
		t.Fatalf("fakefleet: %s is not in a network namespace of its own: it has the interfaces %v, not loopback alone", t.Name(), names)
	}
}

// combinedOutput runs cmd on a thread of its own: the child's parent-death signal (childAttr)
// is sent when the thread that started it exits, which Go may do to any thread not locked.
func combinedOutput(cmd *exec.Cmd) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return cmd.CombinedOutput()
}

// notRun skips the test, loudly, or fails it where PROBECTL_REQUIRE_NETNS=1.
func notRun(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("PROBECTL_REQUIRE_NETNS") == "1" {
		t.Fatalf("%s %s (PROBECTL_REQUIRE_NETNS=1)", t.Name(), why)
	}
	fmt.Fprintf(os.Stderr, "SKIPPED %s: it %s; PROBECTL_REQUIRE_NETNS=1 makes this a failure\n", t.Name(), why)
	t.Skipf("SKIPPED, NOT RUN: it %s", why)
}

const (
	// netnsChildEnv names, in the child's environment, the test it runs in its namespace.
	netnsChildEnv = "PROBECTL_TEST_NETNS_CHILD"
	// netnsParentEnv holds, in the child's environment, its parent's network namespace.
	netnsParentEnv = "PROBECTL_TEST_NETNS_PARENT"
)

// unshareCommands are the commands that may run another in a new network namespace, tried in
// order: root with CAP_SYS_ADMIN makes one directly; anyone else (root without it too) as root
// of a user namespace of its own, where unprivileged user namespaces are allowed.
var unshareCommands = [][]string{{"unshare", "--net"}, {"unshare", "--user", "--map-root-user", "--net"}}

// unshareCommand is the first of unshareCommands that works here, or why none does: they are
// tried once, each by setting up a namespace's loopback, as the child's script does (the
// Makefile's warning runs the same probe).
var unshareCommand = sync.OnceValues(func() ([]string, string) {
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Sprintf("%s is not installed (%v)", tool, err)
		}
	}
	var failed []string
	for _, cmd := range unshareCommands {
		if os.Geteuid() != 0 && !slices.Contains(cmd, "--user") {
			continue
		}
		out, err := exec.Command(cmd[0], slices.Concat(cmd[1:], []string{"ip", "link", "set", "lo", "up"})...).CombinedOutput()
		if err == nil {
			return cmd, ""
		}
		failed = append(failed, fmt.Sprintf("`%s ip link set lo up` failed: %v: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out))))
	}
	return nil, strings.Join(failed, "; ")
})

// runPattern is the -test.run pattern that selects the test named name (a subtest too) alone.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// proxyDatabase serves, until the test ends, a Unix socket in a directory of its own that
// carries each connection over TCP (TLS too where raw asks for it) to raw's server, and returns
// raw reached through that socket, signing in with raw's user and password (as pgx resolved
// them: from the URL, PGPASSWORD or a password file).
func proxyDatabase(t *testing.T, raw string) string {
	t.Helper()
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		t.Fatalf("fakefleet: parse the database URL: %v", err)
	}
	network, addr := pgconn.NetworkAddress(cfg.Host, cfg.Port)
	tlsConfig, plainToo := cfg.TLSConfig, cfg.TLSConfig == nil
	for _, fb := range cfg.Fallbacks {
		if fb.Host == cfg.Host && fb.Port == cfg.Port && fb.TLSConfig == nil {
			plainToo = true // sslmode=prefer or allow
		}
	}
	// A socket's path is short (108 bytes on Linux): a directory of its own under /tmp where
	// TMPDIR's would be too long.
	base := ""
	if len(os.TempDir()) > 60 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "netns-pg-")
	if err != nil {
		t.Fatalf("fakefleet: the database proxy's directory: %v", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, fmt.Sprintf(".s.PGSQL.%d", cfg.Port)))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("fakefleet: the database proxy's socket: %v", err)
	}
	p := &pgProxy{network: network, addr: addr, tls: tlsConfig, plainToo: plainToo, conns: map[net.Conn]struct{}{}}
	p.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if !p.track(c) {
				return
			}
			p.wg.Go(func() {
				if err := p.serve(c); err != nil {
					p.mu.Lock()
					p.errs = append(p.errs, err)
					p.mu.Unlock()
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = l.Close()
		p.mu.Lock()
		p.closed = true
		for c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		_ = os.RemoveAll(dir)
		for _, err := range p.errs {
			t.Logf("fakefleet: the database proxy: %v", err)
		}
	})

	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("fakefleet: parse the database URL: %v", err)
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "ssl") || slices.Contains([]string{"host", "hostaddr", "port", "passfile", "target_session_attrs"}, k) {
			q.Del(k)
		}
	}
	q.Set("host", dir)
	q.Set("port", strconv.Itoa(int(cfg.Port)))
	q.Set("sslmode", "disable") // the proxy speaks TLS to the server where raw asks for it
	u.Host, u.RawQuery = "", q.Encode()
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	} else {
		u.User = url.User(cfg.User)
	}
	return u.String()
}

// pgProxy carries connections from its Unix socket to a database server.
type pgProxy struct {
	network, addr string
	tls           *tls.Config // nil: plain
	plainToo      bool        // a server that refuses TLS is spoken to plainly

	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // open connections, both ends, closed at the test's end
	errs   []error
}

// track records c to close at the test's end, or closes it and says so if that came already.
func (p *pgProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// serve carries the client c's bytes to the server and back until either end closes.
func (p *pgProxy) serve(c net.Conn) error {
	defer func() { _ = c.Close() }()
	dialer := net.Dialer{Timeout: 30 * time.Second}
	up, err := dialer.Dial(p.network, p.addr)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", p.addr, err)
	}
	if !p.track(up) {
		return nil
	}
	defer func() { _ = up.Close() }()
	server := up
	if p.tls != nil {
		if server, err = p.startTLS(up); err != nil {
			return err
		}
		if !p.track(server) {
			return nil
		}
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(server, c)
		_ = server.Close() // the client left: so does the server's end, ending the copy below
		close(done)
	}()
	_, _ = io.Copy(c, server)
	_ = c.Close()
	<-done
	return nil
}

// startTLS asks the server for TLS (PostgreSQL's SSLRequest) and speaks it over up, or goes on
// plainly where the server declines and plain connections are allowed.
func (p *pgProxy) startTLS(up net.Conn) (net.Conn, error) {
	req := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), 80877103)
	if _, err := up.Write(req); err != nil {
		return nil, fmt.Errorf("ask %s for TLS: %w", p.addr, err)
	}
	answer := make([]byte, 1)
	if _, err := io.ReadFull(up, answer); err != nil {
		return nil, fmt.Errorf("ask %s for TLS: %w", p.addr, err)
	}
	switch {
	case answer[0] == 'S':
		tc := tls.Client(up, p.tls)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("TLS with %s: %w", p.addr, err)
		}
		return tc, nil
	case answer[0] == 'N' && p.plainToo:
		return up, nil
	default:
		return nil, fmt.Errorf("%s declined TLS, which the database URL requires", p.addr)
	}
}

// Decoys are the listeners at a namespace's refused addresses.
type Decoys struct {
	decoys []*decoy
}

type decoy struct {
	l        net.Listener
	mu       sync.Mutex
	offered  int           // connections from anything but the marker
	marker   string        // the local address of Connections' own connection, once made
	reached  chan struct{} // closed when the marker's connection is accepted
	accepted []string      // remote addresses accepted before the marker was known
}

func listenDecoys(t *testing.T, addrs []string) *Decoys {
	t.Helper()
	ds := &Decoys{}
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("fakefleet: decoy %s: %v", a, err)
		}
		d := &decoy{l: l, reached: make(chan struct{})}
		go d.serve()
		t.Cleanup(func() { _ = l.Close() })
		ds.decoys = append(ds.decoys, d)
	}
	return ds
}

// serve accepts connections in the order they came and closes each at once.
func (d *decoy) serve() {
	for {
		c, err := d.l.Accept()
		if err != nil {
			return
		}
		from := c.RemoteAddr().String()
		_ = c.Close()
		d.mu.Lock()
		switch {
		case d.marker == "":
			d.accepted = append(d.accepted, from)
		case from == d.marker:
			close(d.reached)
		default:
			d.offered++
		}
		d.mu.Unlock()
	}
}

// Connections is how many connections were offered to the decoys so far. It connects to each decoy
// itself, from an address of its own, and waits until that connection is accepted: as the
// decoy accepts in order, every connection made before has been counted by then, even one
// whose client gave up before it was accepted.
func (ds *Decoys) Connections(t *testing.T) int {
	t.Helper()
	n := 0
	for _, d := range ds.decoys {
		ap := netip.MustParseAddrPort(d.l.Addr().String())
		from := netip.MustParseAddr("127.0.0.2")
		if ap.Addr().Is6() {
			from = netip.IPv6Loopback()
		}
		dialer := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))}
		c, err := dialer.DialContext(t.Context(), "tcp", ap.String())
		if err != nil {
			t.Fatalf("fakefleet: connect to the decoy %s: %v", ap, err)
		}
		marker := c.LocalAddr().String()
		d.mu.Lock()
		d.marker = marker
		for _, from := range d.accepted {
			if from == marker {
				close(d.reached)
			} else {
				d.offered++
			}
		}
		d.accepted = nil
		reached := d.reached
		d.mu.Unlock()
		select {
		case <-reached:
		case <-t.Context().Done():
			t.Fatalf("fakefleet: the decoy %s never accepted its marker: %v", ap, errors.Join(c.Close(), t.Context().Err()))
		}
		_ = c.Close()
		d.mu.Lock()
		n += d.offered
		d.marker, d.reached = "", make(chan struct{}) // for the next call's marker
		d.mu.Unlock()
	}
	return n
}
