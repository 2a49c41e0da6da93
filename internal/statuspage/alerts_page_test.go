package statuspage_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
)

// An open alert (a server down, not recovered) is on both pages and in /status.json (the bytes
// `status -o json` writes) as the documented `alerts` array; a recovered one is on neither.
func TestPagesShowOpenAlertsInTheirLanguage(t *testing.T) {
	t.Parallel()
	h, pool, _ := seeded(t)
	ctx := context.Background()
	require.NotContains(t, get(t, h, "/status").Body, `<section id="alerts">`, "no alert open: no section")

	opened := statustest.Now.Add(-7 * time.Minute)
	var openID, resolvedID string
	require.NoError(t, pool.QueryRow(ctx, `SELECT alert_emit('server.down', id, 'down', 'up', '{}', NULL, '{}', $2)::text
		FROM servers WHERE slug = $1`, statustest.Stale, opened).Scan(&openID))
	require.NoError(t, pool.QueryRow(ctx, `SELECT alert_emit('server.down', id, 'down', 'up', '{}', NULL, '{}', $2)::text
		FROM servers WHERE slug = $1`, statustest.DueLongest, opened).Scan(&resolvedID))
	_, err := pool.Exec(ctx, `UPDATE alert_events SET resolved_at = $2 WHERE id = $1::uuid`, resolvedID, statustest.Now)
	require.NoError(t, err)

	for _, c := range []struct{ path, title string }{{"/status", "Open alerts"}, {"/zh/status", "未恢复的告警"}} {
		res := get(t, h, c.path)
		require.Equal(t, http.StatusOK, res.Code)
		i := strings.Index(res.Body, `<section id="alerts">`)
		require.GreaterOrEqual(t, i, 0, c.path)
		section := res.Body[i:]
		section = section[:strings.Index(section, "</section>")]
		require.Contains(t, section, "<h2>"+c.title+"</h2>")
		require.Contains(t, section, ">"+statustest.Stale+"<")
		require.Contains(t, section, openID)
		require.Contains(t, section, `datetime="`+opened.Format(time.RFC3339)+`"`)
		require.NotContains(t, section, statustest.DueLongest, "a recovered alert is not open")
	}

	var doc struct {
		Alerts []map[string]any `json:"alerts"`
		Total  int              `json:"alerts_total"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(t, h, "/status.json").Body), &doc))
	require.Equal(t, 1, doc.Total)
	// the shape of `status -o json`: its runs and deliveries too (none made here)
	require.Equal(t, []map[string]any{{"id": openID, "type": "server.down", "server": statustest.Stale,
		"state": "down", "opened_at": opened.Format(time.RFC3339), "runs": []any{}, "deliveries": []any{}}}, doc.Alerts)
}

// A round the storm guard judged degraded is marked in the recent rounds of both pages.
func TestPagesMarkADegradedRound(t *testing.T) {
	t.Parallel()
	h, pool, sc := seeded(t)
	require.NotContains(t, get(t, h, "/status").Body, `badge degraded`)
	_, err := pool.Exec(context.Background(), `INSERT INTO alert_degraded_rounds (round_id, checked, failed) VALUES ($1, 4, 3)`,
		sc.FinishedRound)
	require.NoError(t, err)
	for _, c := range []struct{ path, word string }{{"/status", ">degraded<"}, {"/zh/status", ">降级<"}} {
		body := get(t, h, c.path).Body
		section := body[strings.Index(body, `<section id="rounds">`):]
		section = section[:strings.Index(section, "</section>")]
		require.Equal(t, 1, strings.Count(section, `badge degraded`), c.path)
		require.Contains(t, section, c.word)
	}
}
