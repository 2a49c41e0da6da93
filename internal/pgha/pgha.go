// Package pgha is the tests' highly available PostgreSQL: a primary started by internal/pglaunch
// and a streaming hot standby made from it with `pg_basebackup -R`, both on loopback, so that a
// test can kill the primary with SIGKILL, promote the standby with `pg_ctl promote`, and watch
// probectl's processes follow the primary through a multi-host URL. Replication is synchronous
// (the standby in synchronous_standby_names, synchronous_commit on for every role) or
// asynchronous, and a test can hold the standby's WAL receiver (SIGSTOP) to open the window in
// which an asynchronous failover loses commits.
//
// Like pglaunch, the servers run as the "postgres" OS user when the caller is root, and die with
// the test binary. Only tests import this package.
package pgha

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/pglaunch"
)

// Options configure Start.
type Options struct {
	// Synchronous makes the standby synchronous: a commit returns once the standby has it.
	Synchronous bool
	// Logf, if set, receives progress messages; t.Logf fits.
	Logf func(format string, args ...any)
}

// Pair is a running primary and standby. Call Stop when done.
type Pair struct {
	Primary *pglaunch.Cluster

	binDir      string
	cred        *syscall.Credential
	standbyRoot string
	standbyData string
	standbyPort int
	standby     *child
	logf        func(string, ...any)
}

// Start starts a primary and a standby that streams from it, and returns once the standby
// streams (and, when synchronous, is the primary's synchronous standby).
func Start(ctx context.Context, opts Options) (*Pair, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	primary, err := pglaunch.Start(ctx, pglaunch.Options{Logf: opts.Logf})
	if err != nil {
		return nil, err
	}
	p := &Pair{Primary: primary, logf: logf}
	if err := p.startStandby(ctx, opts.Synchronous); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *Pair) startStandby(ctx context.Context, synchronous bool) error {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p.Primary.PID()))
	if err != nil {
		return fmt.Errorf("find the primary's binaries: %w", err)
	}
	p.binDir = filepath.Dir(exe)
	if p.cred, err = credential(); err != nil {
		return err
	}
	// The standby's own directory, beside the primary's and as private.
	if p.standbyRoot, err = os.MkdirTemp("", "pgha-standby-"); err != nil {
		return fmt.Errorf("create standby directory: %w", err)
	}
	if p.cred != nil {
		if err := os.Chown(p.standbyRoot, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return fmt.Errorf("hand the standby directory to postgres: %w", err)
		}
	}
	p.standbyData = filepath.Join(p.standbyRoot, "data")
	if err := p.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(p.Primary.Port()), "-U", "postgres",
		"-D", p.standbyData, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(p.standbyRoot, "sock"), 0o700); err != nil {
		return err
	}
	if p.cred != nil {
		if err := os.Chown(filepath.Join(p.standbyRoot, "sock"), int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			return err
		}
	}
	if p.standbyPort, err = freePort(); err != nil {
		return err
	}
	if err := p.startStandbyServer(); err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, func(ctx context.Context) error { return ping(ctx, p.StandbyURL("postgres")) }); err != nil {
		return fmt.Errorf("standby did not accept connections: %w; log:\n%s", err, p.standbyLog())
	}
	// Set on the primary only after the base backup: a promoted standby that inherited it would
	// wait for a standby of its own at every commit.
	// pglaunch starts the server with synchronous_commit=off, which loses the last commits to a
	// kill -9 of the primary alone; a role setting wins over that, for every new session.
	stmts := []string{`ALTER ROLE ALL SET synchronous_commit = 'on'`}
	if synchronous {
		stmts = append(stmts, `ALTER SYSTEM SET synchronous_standby_names = '*'`, `SELECT pg_reload_conf()`)
	}
	if err := execOn(ctx, p.Primary.URL("postgres"), stmts...); err != nil {
		return err
	}
	want := "async"
	if synchronous {
		want = "sync"
	}
	err = waitFor(ctx, 60*time.Second, func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, p.Primary.URL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1`,
			want).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("no %s standby streams yet", want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("standby does not stream: %w; log:\n%s", err, p.standbyLog())
	}
	p.logf("pgha: standby streaming (%s) on 127.0.0.1:%d from 127.0.0.1:%d", want, p.standbyPort, p.Primary.Port())
	return nil
}

func (p *Pair) startStandbyServer() error {
	logFile, err := os.OpenFile(filepath.Join(p.standbyRoot, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(p.binDir, "postgres"), "-D", p.standbyData, "-k", filepath.Join(p.standbyRoot, "sock"),
		"-p", strconv.Itoa(p.standbyPort), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
		"-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=128MB",
		"-c", "hot_standby_feedback=on")
	cmd.Dir = p.standbyRoot
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p.standby, err = start(cmd, p.cred)
	return err
}

// StandbyURL is the standby's URL for database dbname, as the superuser postgres.
func (p *Pair) StandbyURL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.standbyPort, url.PathEscape(dbname))
}

// StandbyPort is the standby's port on 127.0.0.1.
func (p *Pair) StandbyPort() int { return p.standbyPort }

// MultiHostURL names both servers, primary first, and asks for the one that takes writes: the URL
// probectl's processes follow the primary with.
func (p *Pair) MultiHostURL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		p.Primary.Port(), p.standbyPort, url.PathEscape(dbname))
}

// KillPrimary kills the primary's postmaster and every process it started with SIGKILL: the
// machine is gone, nothing is flushed or shut down.
func (p *Pair) KillPrimary() error {
	pid := p.Primary.PID()
	children := childrenOf(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill primary: %w", err)
	}
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	p.logf("pgha: killed the primary (pid %d and %d children)", pid, len(children))
	return nil
}

// Promote promotes the standby (`pg_ctl promote`, which waits until it takes writes).
//
// The promote signal is sent again while the standby is still in recovery: one that reaches the
// standby while its postmaster restarts its processes (after a dropped receiver) is lost, and
// pg_ctl would wait out its timeout for a promotion that never began.
func (p *Pair) Promote(ctx context.Context) error {
	var last error
	for try := 0; try < 6; try++ {
		last = p.run(ctx, "pg_ctl", "promote", "-D", p.standbyData, "-w", "-t", "20")
		if last == nil || !p.inRecovery(ctx) {
			p.logf("pgha: standby promoted")
			return nil
		}
		p.logf("pgha: promote not done yet (%v); signalling again", last)
	}
	return last
}

// inRecovery says whether the standby still replays (not yet promoted); true when it cannot be
// asked.
func (p *Pair) inRecovery(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.StandbyURL("postgres"))
	if err != nil {
		return true
	}
	defer conn.Close(ctx)
	var in bool
	if err := conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&in); err != nil {
		return true
	}
	return in
}

// HoldWALReceiver stops the standby's WAL receiver (SIGSTOP): commits on the primary meanwhile do
// not reach the standby. The returned drop kills the held receiver (SIGKILL), so that what the
// primary had sent into its socket meanwhile is never read: as a network partition would, the
// standby never sees those commits. (The standby restarts its recovery after the kill, and a new
// receiver finds the primary gone.) Call drop after KillPrimary.
func (p *Pair) HoldWALReceiver() (drop func(), err error) {
	for _, c := range childrenOf(p.standby.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c))
		if strings.Contains(string(cmdline), "walreceiver") {
			if err := syscall.Kill(c, syscall.SIGSTOP); err != nil {
				return nil, fmt.Errorf("stop the wal receiver: %w", err)
			}
			return func() {
				_ = syscall.Kill(c, syscall.SIGKILL)
				// Until the postmaster has reaped it, the standby still answers as before: a
				// WaitStandby then would not wait for the restart the kill sets off.
				for i := 0; i < 200 && syscall.Kill(c, 0) == nil; i++ {
					time.Sleep(25 * time.Millisecond)
				}
			}, nil
		}
	}
	return nil, errors.New("the standby has no wal receiver")
}

// WaitStandby waits until the standby accepts connections again (after a dropped receiver).
func (p *Pair) WaitStandby(ctx context.Context) error {
	return waitFor(ctx, 60*time.Second, func(ctx context.Context) error { return ping(ctx, p.StandbyURL("postgres")) })
}

// Stop stops both servers and removes their directories.
func (p *Pair) Stop() error {
	var errs []error
	if p.standby != nil && !p.standby.exited() {
		_ = p.standby.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.standby.done:
		case <-time.After(30 * time.Second):
			_ = p.standby.cmd.Process.Kill()
			<-p.standby.done
		}
	}
	if p.standbyRoot != "" {
		errs = append(errs, os.RemoveAll(p.standbyRoot))
	}
	errs = append(errs, p.Primary.Stop())
	return errors.Join(errs...)
}

func (p *Pair) standbyLog() string {
	b, _ := os.ReadFile(filepath.Join(p.standbyRoot, "postgres.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// run runs one of the server's tools as the server's user and waits for it.
func (p *Pair) run(ctx context.Context, tool string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(p.binDir, tool), args...)
	cmd.Dir = os.TempDir()
	cmd.Stdout, cmd.Stderr = &out, &out
	c, err := start(cmd, p.cred)
	if err != nil {
		return fmt.Errorf("run %s: %w", tool, err)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("run %s: %w", tool, ctx.Err())
	}
	if c.err != nil {
		return fmt.Errorf("run %s: %w; output:\n%s", tool, c.err, out.String())
	}
	return nil
}

// child is a started process whose exit is observable through done.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start starts cmd as cred's user so that it dies with the test binary (as pglaunch does: the
// forking thread stays locked until the child exits, since the kernel's parent-death signal
// follows the thread).
func start(cmd *exec.Cmd, cred *syscall.Credential) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	c := &child{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// credential is the postgres OS user's when we are root (PostgreSQL refuses root), else nil.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no postgres OS user: %w", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// childrenOf lists the direct children of pid (Linux).
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// waitFor polls cond until it returns nil or within passes.
func waitFor(ctx context.Context, within time.Duration, cond func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		err := cond(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// execOn runs statements on one connection to url.
func execOn(ctx context.Context, url string, stmts ...string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
