package fakefleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/dbtest"
)

// Namespace is what a test's own network namespace holds (see InNetworkNamespace).
type Namespace struct {
	// Decoys are addresses (host:port) the SSRF guard must refuse, such as a cloud metadata
	// endpoint. Each is given to the namespace's loopback interface, with a listener that counts
	// the connections it is offered, so that a guard that broke would reach a decoy here rather
	// than the real endpoint.
	Decoys []string
	// Database: the child makes its databases on this test binary's database server (dbtest's),
	// reached through the server's Unix socket, which a network namespace does not cut off.
	Database bool
}

// InNetworkNamespace runs the calling test again, alone, in a child process (this test binary)
// inside a network namespace of its own: only loopback exists there, so nothing the test sends
// can leave the machine whatever the code under test does, and the namespace's decoys stand
// where the refused endpoints would be. An SSRF test that goes through code whose dialer it
// cannot replace (a command, another package's client) runs this way instead of trusting the
// guard not to dial a real metadata address.
//
// In the parent it returns nil once the child has passed (the test then returns); in the child
// it returns the decoys, for the test to check after its body. Where no network namespace can be
// made (it takes unshare(1) and ip(8), from util-linux and iproute2, and for an ordinary user
// unprivileged user namespaces) it skips loudly, naming what is missing, unless
// PROBECTL_REQUIRE_NETNS=1 (as .ci/run sets) makes that a failure.
func InNetworkNamespace(t *testing.T, ns Namespace) *Decoys {
	t.Helper()
	if os.Getenv(netnsChildEnv) == t.Name() {
		return listenDecoys(t, ns.Decoys)
	}
	unshare, why := unshareCommand()
	if why != "" {
		notRun(t, "runs in a network namespace of its own, so that nothing it sends can leave the machine, and "+why)
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

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // only stops a hung child
	defer cancel()
	args := append(unshare[1:], "sh", "-ec", strings.Join(script, " && "), os.Args[0],
		"-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v")
	cmd := exec.CommandContext(ctx, unshare[0], args...)
	cmd.Env = append(os.Environ(), netnsChildEnv+"="+t.Name())
	if ns.Database {
		cmd.Env = append(cmd.Env, dbtest.EnvURL+"="+socketURL(t, dbtest.NewEmptyDB(t)))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in its network namespace: %v\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") || strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Fatalf("%s did not pass in its network namespace:\n%s", t.Name(), out)
	}
	return nil
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

// netnsChildEnv names, in the child's environment, the test it runs in its namespace.
const netnsChildEnv = "PROBECTL_TEST_NETNS_CHILD"

// unshareCommand is the command that runs another in a new network namespace, or why there is
// none: it is tried once.
var unshareCommand = sync.OnceValues(func() ([]string, string) {
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Sprintf("%s is not installed (%v)", tool, err)
		}
	}
	cmd := []string{"unshare", "--net"}
	if os.Geteuid() != 0 {
		cmd = append(cmd, "--map-root-user") // root in a user namespace of its own, to set up lo
	}
	probe := append(append([]string(nil), cmd[1:]...), "ip", "link", "set", "lo", "up")
	if out, err := exec.Command(cmd[0], probe...).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("`%s ip link set lo up` failed: %v: %s", strings.Join(cmd, " "), err, strings.TrimSpace(string(out)))
	}
	return cmd, ""
})

// runPattern is the -test.run pattern that selects the test named name (a subtest too) alone.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// socketURL is raw (a database's URL) reached through its server's Unix socket.
func socketURL(t *testing.T, raw string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatalf("fakefleet: connect to %s: %v", raw, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dirs, port string
	if err := conn.QueryRow(ctx, "SELECT current_setting('unix_socket_directories'), current_setting('port')").Scan(&dirs, &port); err != nil {
		t.Fatalf("fakefleet: the server's socket: %v", err)
	}
	dir, _, _ := strings.Cut(dirs, ",")
	dir = strings.TrimSpace(dir)
	if _, err := os.Stat(filepath.Join(dir, ".s.PGSQL."+port)); err != nil {
		notRun(t, fmt.Sprintf("runs in a network namespace of its own and needs the database server's Unix socket, which is not on this machine (%v)", err))
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("fakefleet: parse %s: %v", raw, err)
	}
	q := u.Query()
	q.Set("host", dir)
	q.Set("port", port)
	u.Host, u.RawQuery = "", q.Encode()
	return u.String()
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

// Connections is how many connections were offered to the decoys. It connects to each decoy
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
		d.mu.Unlock()
		select {
		case <-d.reached:
		case <-t.Context().Done():
			t.Fatalf("fakefleet: the decoy %s never accepted its marker: %v", ap, errors.Join(c.Close(), t.Context().Err()))
		}
		_ = c.Close()
		d.mu.Lock()
		n += d.offered
		d.mu.Unlock()
	}
	return n
}
