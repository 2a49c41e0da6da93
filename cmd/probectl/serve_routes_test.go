package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
)

// serve --help lists every route the server registers (the same table), each with what it answers.
func TestServeHelpListsEveryRoute(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "serve", "--help")
	require.Equal(t, 0, res.Code, res.Stderr)
	routes := statuspage.Routes()
	require.GreaterOrEqual(t, len(routes), 15)
	for _, r := range routes {
		assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(r.Path)+` +\S`, res.Stdout, "serve --help lists %s", r.Path)
	}
	for _, path := range []string{"/servers", "/servers/{slug}", "/servers.json", "/keys", "/zh/keys", "/keys.pem", "/badge/{slug}.svg"} {
		assert.Regexp(t, `(?m)^  `+regexp.QuoteMeta(path)+` `, res.Stdout)
	}
}
