package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated is a template database with the schema applied; each test clones it.
var migrated = dbtest.NewTemplate("probectl_cmd", testfactory.Migrate)

// cliResult is what one run of the command line produced.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// cli runs probectl in-process, as a pipe would see it (not a terminal), with only the environment
// given (the test machine's PG* variables never leak in).
type cli struct {
	env   map[string]string
	stdin string
	ctx   context.Context // nil: context.Background(); a test cancels its own to play Ctrl-C
}

func (c cli) run(t *testing.T, args ...string) cliResult {
	t.Helper()
	io, in, out, errOut := testStreams()
	in.WriteString(c.stdin)
	// The spool lives in the test's own directory unless the test names one.
	state := t.TempDir()
	getenv := func(k string) string {
		if v, ok := c.env[k]; ok || k != "XDG_STATE_HOME" {
			return v
		}
		return state
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	code := Execute(ctx, args, io, getenv)
	return cliResult{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// testEnv is an empty environment but for the spool, which lives in the test's own directory.
func testEnv(t *testing.T) func(string) string {
	state := t.TempDir()
	return func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}
}

// runCLI runs probectl with the given arguments and no environment.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	return cli{}.run(t, args...)
}

// migratedDB returns the URL of a fresh migrated database and a pool on it for assertions.
func migratedDB(t *testing.T) (string, *pgxpool.Pool) {
	t.Helper()
	url := migrated.NewDB(t)
	return url, dbtest.Pool(t, url)
}

// writeFile writes content to a file in a temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := t.TempDir() + "/" + name
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

// testStreams returns streams backed by buffers, as a pipe would be (not terminals), and the
// buffers for stdin, stdout and stderr.
func testStreams() (*render.Streams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &render.Streams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}
