package statuspage_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

// bidiRunes are the controls that reorder what a browser shows ("Trojan Source"): embeddings and
// overrides, isolates, marks and the Arabic letter mark.
var bidiRunes = []rune{'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069',
	'\u200e', '\u200f', '\u061c'}

// A hostile server's error text, shown on the server page (its last runs, the uptime bar's titles),
// reaches the browser escaped, in both languages.
func TestPagesShowAServersBidiControlsEscapedNotObeyed(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	ctx := t.Context()
	hostile := "timeout \u202egnp.exe\u202c \u2066x\u2069 \u200e\u200f\u061c \u202a\u202b\u202d\u2067\u2068"
	server := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "mirror"})
	started := historyNow.Add(-time.Hour)
	finished := started.Add(time.Second)
	job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: server, RequestedAt: &started,
		FinishedAt: &finished, Outcome: "failed"})
	result, err := json.Marshal(map[string]any{"outcome": "failed", "summary": "HTTP 500", "error": hostile, "requests": []any{}})
	require.NoError(t, err)
	testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: server, StartedAt: &started,
		FinishedAt: &finished, Result: result})
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return historyNow }})

	for _, path := range []string{"/servers/mirror", "/zh/servers/mirror"} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code, res.Body)
		assert.Contains(t, res.Body, `timeout \u202egnp.exe\u202c \u2066x\u2069 \u200e\u200f\u061c \u202a\u202b\u202d\u2067\u2068`, path)
		for _, r := range bidiRunes {
			assert.NotContains(t, res.Body, string(r), "%s shows U+%04X raw", path, r)
		}
	}
}

// The status page passes the same guard: a release's text (here its version) is shown escaped.
func TestTheStatusPageShowsBidiControlsEscaped(t *testing.T) {
	t.Parallel()
	h, pool, sc := seeded(t)
	_, err := pool.Exec(t.Context(), "UPDATE releases SET version = $1 WHERE id = $2", "v2\u202e1v", sc.ReleaseID) // test-only: plant the text
	require.NoError(t, err)

	for _, path := range []string{"/status", "/zh/status"} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code, res.Body)
		assert.Contains(t, res.Body, `v2\u202e1v`, path)
		assert.NotContains(t, res.Body, "\u202e", path)
	}
}
