package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/pglaunch"
)

// server is where this test binary creates its databases.
type server struct {
	base    url.URL           // any database on the server; dbURL swaps the path
	admin   *pgxpool.Pool     // runs CREATE and DROP DATABASE
	cluster *pglaunch.Cluster // nil when the server came from EnvURL

	mu        sync.Mutex
	templates []string // to drop at exit when the server outlives us
}

// shared is the one server per test binary, found or started on first use;
// an error sticks, so every test reports the same cause.
var shared struct {
	mu    sync.Mutex
	tried bool
	srv   *server
	err   error
}

func sharedServer() (*server, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.tried {
		shared.tried = true
		shared.srv, shared.err = connect()
	}
	return shared.srv, shared.err
}

func connect() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if raw := os.Getenv(EnvURL); raw != "" {
		return open(ctx, raw, nil)
	}
	if !mainRunning.Load() {
		return nil, fmt.Errorf("set %s, or add `func TestMain(m *testing.M) { dbtest.Main(m) }` so a throwaway server can be started and stopped", EnvURL)
	}
	c, err := pglaunch.Start(ctx, pglaunch.Options{})
	if err != nil {
		return nil, fmt.Errorf("start a throwaway server (or set %s to use an existing one): %w", EnvURL, err)
	}
	s, err := open(ctx, c.URL("postgres"), c)
	if err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return s, nil
}

func open(ctx context.Context, raw string, c *pglaunch.Cluster) (*server, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s must be a postgres:// URL", EnvURL)
	}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, fmt.Errorf("parse server URL: %w", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = "probectl-dbtest"
	admin, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	if err := admin.Ping(ctx); err != nil {
		admin.Close()
		return nil, fmt.Errorf("connect to %s: %w", u.Redacted(), err)
	}
	return &server{base: *u, admin: admin, cluster: c}, nil
}

// release stops the throwaway server, or drops our templates from a server
// that outlives this binary; the tests' own databases are gone already.
func release() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	s := shared.srv
	if s == nil {
		return nil
	}
	shared.srv, shared.err = nil, errors.New("test server already released")
	var errs []error
	if s.cluster == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.mu.Lock()
		templates := s.templates
		s.mu.Unlock()
		for _, name := range templates {
			errs = append(errs, s.dropTemplate(ctx, name))
		}
	}
	s.admin.Close()
	if s.cluster != nil {
		errs = append(errs, s.cluster.Stop())
	}
	return errors.Join(errs...)
}

func (s *server) dbURL(name string) string {
	u := s.base
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

// createDB retries "source database is being accessed by other users": a
// connection to the template that is just going away must not fail a test.
func (s *server) createDB(ctx context.Context, name, template string) error {
	sql := "CREATE DATABASE " + ident(name)
	if template != "" {
		sql += " TEMPLATE " + ident(template)
	}
	const attempts = 10
	for attempt := 1; ; attempt++ {
		_, err := s.admin.Exec(ctx, sql)
		if err == nil {
			return nil
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "55006" || attempt == attempts {
			return fmt.Errorf("create database %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create database %s: %w", name, err)
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
}

func (s *server) dropDB(ctx context.Context, name string) error {
	if _, err := s.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func (s *server) dropTemplate(ctx context.Context, name string) error {
	if _, err := s.admin.Exec(ctx, "ALTER DATABASE "+ident(name)+" IS_TEMPLATE false"); err != nil {
		return fmt.Errorf("unmark template %s: %w", name, err)
	}
	return s.dropDB(ctx, name)
}

// track remembers a template to drop at exit.
func (s *server) track(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.templates = append(s.templates, name)
}

func ident(name string) string {
	return pgx.Identifier{name}.Sanitize()
}

// processToken tells this test binary's databases apart from those of the
// binaries `go test ./...` runs beside it, here or on other machines sharing
// the server.
var processToken = sync.OnceValue(func() string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%d_%s", os.Getpid(), hex.EncodeToString(b))
})
