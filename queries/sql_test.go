package queries

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestParseNamedSplitsBlocksAndRefusesADuplicateName(t *testing.T) {
	t.Parallel()
	got, err := parseNamed(fstest.MapFS{"a.sql": {Data: []byte("-- a comment\n-- name: One\nSELECT 1;\n\n-- name: Two\n-- why two\nSELECT 2;\n")}})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"One": "SELECT 1;", "Two": "-- why two\nSELECT 2;"}, got)

	_, err = parseNamed(fstest.MapFS{
		"a.sql": {Data: []byte("-- name: One\nSELECT 1;\n")},
		"b.sql": {Data: []byte("-- name: One\nSELECT 2;\n")},
	})
	require.ErrorContains(t, err, "query One defined twice")
}

func TestEveryEmbeddedQueryHasABody(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, named)
	for name, body := range named {
		require.NotEmpty(t, body, name)
	}
}

func TestRedactAndLastLineKeepThePasswordOut(t *testing.T) {
	t.Parallel()
	msg := "failed to connect to `user=u database=d`:\n\t127.0.0.1:5432 (127.0.0.1): server error: FATAL: password authentication failed for user \"u\" (pw s3cr3t)"
	got := redact(lastLine(msg), "s3cr3t")
	require.Equal(t, "server error: FATAL: password authentication failed for user \"u\" (pw xxxxx)", got)
}

// positionalAllowed lists the queries that may still take more than three positional arguments:
// the settings inserts of a release and of a round, which the settings rewrite replaces. An entry
// that no longer needs its place fails the test, so the list only shrinks.
var positionalAllowed = map[string]bool{}

// A query with more than three arguments names them (@name, passed as pgx.StrictNamedArgs): past
// $3 a reader counts positions, and a wrapper that passes two of them in the wrong order compiles
// and runs. A query uses one style: pgx rewrites @name to $1.., so a $n beside them would take a
// named value (CONTRIBUTING.md, "The data layer").
// The test kit's statements (internal/testfactory/sql, one per file) are held to it too.
func TestQueryArgumentsPastThreeHaveNames(t *testing.T) {
	t.Parallel()
	all := maps.Clone(named)
	files, err := filepath.Glob("../internal/testfactory/sql/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		all[filepath.ToSlash(f)] = string(data)
	}
	for name, body := range all {
		highest, usesNames := placeholders(body)
		switch {
		case highest > 3 && !positionalAllowed[name]:
			t.Errorf("query %s uses $%d: name its arguments (@name, pgx.StrictNamedArgs)", name, highest)
		case highest <= 3 && positionalAllowed[name]:
			t.Errorf("query %s no longer needs its place in positionalAllowed: remove it", name)
		}
		if highest > 0 && usesNames {
			t.Errorf("query %s mixes $%d with @names: use names only", name, highest)
		}
	}
}

func TestPlaceholdersSkipCommentsLiteralsAndIdentifiers(t *testing.T) {
	t.Parallel()
	type found struct {
		highest int
		named   bool
	}
	for sql, want := range map[string]found{
		"SELECT $1, $2":                             {2, false},
		"SELECT @a, $12::int":                       {12, true},
		"SELECT @a_1::interval, b @> c, @ -5":       {0, true},
		"SELECT a @> b, @ -5":                       {0, false},
		"-- $9 and @x in a comment\nSELECT $1":      {1, false},
		"/* $9 @x */ SELECT '$9 @x', \"a$9@x\", $2": {2, false},
		"SELECT $$ $9 @x $$, $f1$ $8 $f1$, $3":      {3, false},
		"SELECT E'\\' $9', 'it''s $9', $1":          {1, false},
		"SELECT x$4 FROM t WHERE y = @y":            {0, true},
		"SELECT 1":                                  {0, false},
	} {
		highest, usesNames := placeholders(sql)
		require.Equal(t, want, found{highest, usesNames}, sql)
	}
}
