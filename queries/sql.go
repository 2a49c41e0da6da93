package queries

import (
	"bufio"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed *.sql
var sqlFiles embed.FS

// DBTX is what the wrappers need: a pool, a connection and a transaction all satisfy it.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is the database handle the domain packages (probe, release, audit, internal/...) take: a
// *pgxpool.Pool or a *pgx.Conn. A function that must run inside its caller's transaction takes a
// pgx.Tx instead; one that only reads or writes in whatever it is given takes a DBTX.
type DB interface {
	DBTX
	Begin(ctx context.Context) (pgx.Tx, error)
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// named holds every "-- name: X" block of the embedded .sql files.
var named = mustParse(sqlFiles)

// SQL returns the text of the named query. A missing name is a programming error and panics, so
// any test that reaches the wrapper finds it.
func SQL(name string) string {
	q, ok := named[name]
	if !ok {
		panic("queries: no query named " + name)
	}
	return q
}

func mustParse(fsys fs.FS) map[string]string {
	out, err := parseNamed(fsys)
	if err != nil {
		panic(err)
	}
	return out
}

// parseNamed splits each file into blocks that start with a "-- name: X" line.
func parseNamed(fsys fs.FS) (map[string]string, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		var name string
		var body strings.Builder
		flush := func() error {
			if name == "" {
				return nil
			}
			if _, dup := out[name]; dup {
				return fmt.Errorf("queries: %s: query %s defined twice", file, name)
			}
			out[name] = strings.TrimSpace(body.String())
			body.Reset()
			return nil
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
				if err := flush(); err != nil {
					return nil, err
				}
				name = strings.TrimSpace(rest)
				continue
			}
			if name != "" {
				body.WriteString(line)
				body.WriteByte('\n')
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
