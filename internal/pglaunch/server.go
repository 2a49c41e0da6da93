package pglaunch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// errPortTaken marks a server that could not bind its port, so serve can
// retry with another.
var errPortTaken = errors.New("port already in use")

// initdb creates the cluster, trusting local connections and skipping fsync:
// the data is thrown away anyway.
func initdb(ctx context.Context, binDir, dataDir string, cred *syscall.Credential) error {
	var out bytes.Buffer
	cmd := exec.Command(filepath.Join(binDir, "initdb"),
		"-D", dataDir, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C")
	cmd.Dir = filepath.Dir(dataDir) // the caller's directory may be closed to the postgres user
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := start(cmd, cred)
	if err != nil {
		return fmt.Errorf("run initdb: %w", err)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("run initdb: %w", ctx.Err())
	}
	if p.err != nil {
		return fmt.Errorf("run initdb: %w; output:\n%s", p.err, lastLines(out.Bytes()))
	}
	return nil
}

// serve starts postgres on a free port and waits until it accepts
// connections, trying another port if the chosen one was taken meanwhile.
func (c *Cluster) serve(ctx context.Context, binDir string, cred *syscall.Credential) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	c.binDir, c.cred = binDir, cred
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err == nil {
			c.port = port
			err = c.Resume(ctx)
		}
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return err
		}
	}
}

func (c *Cluster) startPostgres(binDir string, cred *syscall.Credential, port int) error {
	c.binDir, c.cred = binDir, cred
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create server log: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	cmd := exec.Command(filepath.Join(binDir, "postgres"),
		"-D", c.dataDir,
		"-k", c.sockDir,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=128MB",
	)
	cmd.Dir = c.root
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if c.detach {
		cmd.SysProcAttr = detachedProcAttr(cred)
	}
	p, err := start(cmd, cred)
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.proc, c.port = p, port
	return nil
}

// waitReady polls with real connections, the only proof that the server is
// past recovery and accepting them.
func (c *Cluster) waitReady(ctx context.Context) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		if c.proc.exited() {
			log := c.logTail()
			err := fmt.Errorf("postgres exited during startup (%v); server log:\n%s", c.proc.err, log)
			if strings.Contains(log, "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		}
		if lastErr = ping(ctx, c.URL("postgres")); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres on port %d: %w (last attempt: %v); server log:\n%s",
				c.port, ctx.Err(), lastErr, c.logTail())
		case <-c.proc.done:
		case <-tick.C:
		}
	}
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

// freePort asks the kernel for a port that is free now; the server may still
// lose it to another process before binding, which serve retries.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// shutdown asks for a fast shutdown (SIGINT: disconnect clients, no wait)
// and kills the server if it is not gone within timeout.
func (p *process) shutdown(timeout time.Duration) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil && !p.exited() {
		return fmt.Errorf("signal postgres: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("postgres did not stop within %s, killed it", timeout)
	}
}

func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", c.logPath, err)
	}
	return lastLines(b)
}

// lastLines keeps the end of a log, where the reason for a failure is.
func lastLines(b []byte) string {
	const keep = 20
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	return strings.Join(lines, "\n")
}
