package queries

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// BodyTag is the dollar-quote tag every function body in the migrations uses. The drift check
// finds bodies by it, so a function quoted otherwise would escape the check.
const BodyTag = "$probe$"

// createFunction finds "CREATE [OR REPLACE] FUNCTION name(" (optionally schema-qualified).
var createFunction = regexp.MustCompile(`(?is)\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*)\s*\(`)

// ShippedFunctionBodies returns the body of every function the embedded migrations define, as
// PostgreSQL stores it in pg_proc.prosrc: the text between the $probe$ tags. Migrations are read
// in version order and only their Up sections; a later definition of a name replaces an earlier
// one.
func ShippedFunctionBodies() (map[string]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names) // zero-padded versions sort in order
	out := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(migrationFiles, name)
		if err != nil {
			return nil, err
		}
		if err := functionBodies(upSection(string(data)), out); err != nil {
			return nil, fmt.Errorf("migration %s: %w", path.Base(name), err)
		}
	}
	return out, nil
}

// upSection is the part of a goose migration before "-- +goose Down".
func upSection(src string) string {
	if i := strings.Index(src, "-- +goose Down"); i >= 0 {
		return src[:i]
	}
	return src
}

// functionBodies adds the body of each CREATE FUNCTION in src to out.
func functionBodies(src string, out map[string]string) error {
	for {
		m := createFunction.FindStringSubmatchIndex(src)
		if m == nil {
			return nil
		}
		fn := strings.ToLower(src[m[2]:m[3]])
		rest := src[m[1]:]
		open := strings.Index(rest, BodyTag)
		if open < 0 {
			return fmt.Errorf("function %s: body is not quoted with %s", fn, BodyTag)
		}
		// Another CREATE FUNCTION before the tag means this one was quoted otherwise.
		if next := createFunction.FindStringIndex(rest[:open]); next != nil {
			return fmt.Errorf("function %s: body is not quoted with %s", fn, BodyTag)
		}
		body := rest[open+len(BodyTag):]
		end := strings.Index(body, BodyTag)
		if end < 0 {
			return fmt.Errorf("function %s: no closing %s", fn, BodyTag)
		}
		out[fn] = body[:end]
		src = body[end+len(BodyTag):]
	}
}

// LiveFunctionBodies reads the bodies (pg_proc.prosrc) of the named functions from the database's
// current schema. A name missing from the result is not defined there; a name defined more than
// once (overloads) is an error, since its body is then ambiguous.
func LiveFunctionBodies(ctx context.Context, db DBTX, names []string) (map[string]string, error) {
	rows, err := db.Query(ctx, SQL("LiveFunctionBodies"), names)
	if err != nil {
		return nil, fmt.Errorf("read function bodies: %w", err)
	}
	type fn struct{ name, body string }
	fns, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (fn, error) {
		var f fn
		err := row.Scan(&f.name, &f.body)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read function bodies: %w", err)
	}
	out := make(map[string]string, len(fns))
	for _, f := range fns {
		if _, dup := out[f.name]; dup {
			return nil, fmt.Errorf("read function bodies: function %s is defined more than once (overloads); drop the stale one", f.name)
		}
		out[f.name] = f.body
	}
	return out, nil
}
