package queries

import (
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
