// Package pglaunch starts a throwaway PostgreSQL cluster on this machine, so
// that tests and `probectl demo` need no server set up beforehand.
//
// It runs the server binaries of a local installation (found through
// pg_config, PATH or /usr/lib/postgresql/*/bin) as a child process, with its
// data in a private temporary directory, listening on a free port of
// 127.0.0.1 and a private socket directory, trusting every local connection
// and with durability switched off for speed. Never keep data you care about
// in it: Stop deletes everything.
//
// PostgreSQL refuses to run as root, so when the caller is root the server
// runs as the "postgres" OS user. On Linux the server is killed when the
// calling process dies, even by SIGKILL; its temporary directory is then left
// behind (named pglaunch-* under os.TempDir). The package works on Unix only.
package pglaunch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds the wait for a fresh server to accept connections;
	// a cold start on a loaded CI machine takes seconds, not minutes.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds a fast shutdown before the server is killed.
	stopTimeout = 30 * time.Second
	// portAttempts covers losing the free port to another process between
	// picking it and the server binding it.
	portAttempts = 3
)

// Options configures Start. The zero value finds the binaries itself and
// stays silent.
type Options struct {
	// BinDir is the directory holding initdb and postgres, for installations
	// Start cannot find; empty means search.
	BinDir string
	// Logf, if set, receives progress messages (binaries, directory, port),
	// so a command or test can show what is going on; t.Logf fits.
	Logf func(format string, args ...any)
	// Detach lets the server outlive the calling process (`probectl demo
	// --keep`): see detach.go. Stop still stops it.
	Detach bool
}

// Cluster is a running throwaway server. Call Stop when done with it.
type Cluster struct {
	root    string // private temporary directory holding everything below
	dataDir string
	sockDir string
	logPath string
	port    int
	detach  bool     // started with Options.Detach
	proc    *process // the postmaster; nil until started
	binDir  string
	cred    *syscall.Credential

	stopOnce sync.Once
	stopErr  error
}

// Start initialises a new cluster in a fresh temporary directory and starts
// its server, returning once it accepts connections. Errors matching
// ErrNoBinaries mean PostgreSQL is not installed where Start looked.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	binDir, err := findBinDir(ctx, opts.BinDir)
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	root, err := makeRoot(cred)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		root:    root,
		dataDir: filepath.Join(root, "data"),
		sockDir: filepath.Join(root, "sock"),
		logPath: filepath.Join(root, "postgres.log"),
		detach:  opts.Detach,
	}
	logf("pglaunch: initialising cluster in %s with %s", c.dataDir, binDir)
	if err := initdb(ctx, binDir, c.dataDir, cred); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if err := mkdirOwned(c.sockDir, cred); err != nil {
		return nil, errors.Join(fmt.Errorf("create socket directory: %w", err), c.Stop())
	}
	if err := c.serve(ctx, binDir, cred); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	logf("pglaunch: postgres ready on 127.0.0.1:%d, log in %s", c.port, c.logPath)
	return c, nil
}

// URL returns a connection URL for database dbname (which must exist; the
// cluster starts with "postgres") as the superuser postgres.
func (c *Cluster) URL(dbname string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, url.PathEscape(dbname))
}

// Port returns the TCP port the server listens on at 127.0.0.1.
func (c *Cluster) Port() int {
	return c.port
}

// Stop shuts the server down (fast shutdown, then SIGKILL after a timeout)
// and deletes its directory. It is safe to call more than once and from
// several goroutines; later calls return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.proc != nil {
			errs = append(errs, c.Shutdown())
		}
		if err := os.RemoveAll(c.root); err != nil {
			errs = append(errs, fmt.Errorf("remove cluster directory: %w", err))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}
