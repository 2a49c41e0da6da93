package statuspage_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
)

// Every route of the table the help lists is one the server answers (with a server the database
// has), and a path outside it is not: the help and the mux agree. /zh/keys is among them.
func TestEveryListedRouteIsServedAndNoOther(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	paths := map[string]bool{}
	for _, r := range statuspage.Routes() {
		path := strings.NewReplacer("{slug}", "weather").Replace(r.Path)
		paths[path] = true
		res := get(t, h, path)
		assert.Contains(t, []int{http.StatusOK, http.StatusFound}, res.Code, "%s answers %d", path, res.Code)
	}
	require.True(t, paths["/zh/keys"], "the Chinese pages' keys")
	require.Len(t, paths, 15)
	for _, path := range []string{"/zh/keys.pem.x", "/nothing", "/zh/status.json", "/zh/nothing"} {
		assert.Equal(t, http.StatusNotFound, get(t, h, path).Code, path)
	}
	assert.JSONEq(t, get(t, h, "/keys").Body, get(t, h, "/zh/keys").Body)
}

// A slug PostgreSQL could not even compare (a NUL, bytes that are not UTF-8) is answered before any
// read: 404 or 400, never 503 as if the database were down.
func TestASlugNoServerCanHaveIsNotFoundOrBadNotUnavailable(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	for path, want := range map[string]int{
		"/servers/we%00ather":    http.StatusNotFound,
		"/zh/servers/%00":        http.StatusNotFound,
		"/servers/%1b%5b2J":      http.StatusNotFound,
		"/servers/%ff%fe":        http.StatusBadRequest,
		"/zh/servers/caf%e9":     http.StatusBadRequest,
		"/badge/we%00ather.svg":  http.StatusNotFound,
		"/badge/%ff.svg":         http.StatusBadRequest,
		"/servers/no-such-thing": http.StatusNotFound,
	} {
		assert.Equal(t, want, get(t, h, path).Code, path)
	}
	cursor := base64.RawURLEncoding.EncodeToString([]byte(`{"slug":"a\u0000b"}`))
	assert.Equal(t, http.StatusBadRequest, get(t, h, "/servers?after="+cursor).Code, "a cursor holding a NUL")
	assert.Equal(t, http.StatusBadRequest, get(t, h, "/servers.json?after="+cursor).Code)
}

// ?desc= is a boolean: anything else is refused, as the other parameters are.
func TestTheDirectoryRefusesADescThatIsNotABoolean(t *testing.T) {
	t.Parallel()
	h := historyHandler(t)
	for _, v := range []string{"true", "false", "1", "0"} {
		assert.Equal(t, http.StatusOK, get(t, h, "/servers.json?desc="+v).Code, v)
	}
	for _, v := range []string{"yes", "descending", "2", "%00"} {
		res := get(t, h, "/servers.json?desc="+v)
		assert.Equal(t, http.StatusBadRequest, res.Code, v)
		assert.Contains(t, res.Body, "desc")
		assert.Equal(t, http.StatusBadRequest, get(t, h, "/servers?desc="+v).Code, v)
	}
}
