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

// A server whose newest run met a bearer challenge had its tools listed by an older run: the page
// says its tools are not verified, in both languages, and does not show the old count as current.
func TestTheServerPageSaysAuthRequiredToolsNotVerified(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	ctx := t.Context()
	locked := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "locked", Kind: "mcp"})
	for i, result := range []map[string]any{
		{"outcome": "ok", "summary": "initialize, tools/list", "tools": 7, "requests": []any{}},
		{"outcome": "ok", "summary": "auth required", "auth": "required", "requests": []any{}},
	} {
		started := historyNow.Add(time.Duration(i-2) * time.Hour)
		finished := started.Add(time.Second)
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: locked, RequestedAt: &started, FinishedAt: &finished, Outcome: "ok"})
		data, err := json.Marshal(result)
		require.NoError(t, err)
		testfactory.Run(ctx, t, pool, &testfactory.RunOpts{JobID: job, ServerID: locked, StartedAt: &started, FinishedAt: &finished, Result: data})
	}
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return historyNow }})
	for path, want := range map[string]string{"/servers/locked": "auth required, tools not verified", "/zh/servers/locked": "需要授权，工具未验证"} {
		res := get(t, h, path)
		require.Equal(t, http.StatusOK, res.Code, res.Body)
		assert.Contains(t, res.Body, want, path)
		assert.NotContains(t, res.Body, "7, since", path)
		assert.NotContains(t, res.Body, "7 个，自", path)
	}
}
