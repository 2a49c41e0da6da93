package alerts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("alerts_tmpl", testfactory.Migrate)

// finish claims nothing: it opens a job for the server in the round (0: none) and finishes it
// through probe_finish, as a round does, with a result of the given outcome and extra fields.
func finish(ctx context.Context, t *testing.T, pool *pgxpool.Pool, round, server int64, outcome string, extra map[string]any) int64 {
	t.Helper()
	opts := &testfactory.JobOpts{ServerID: server}
	if round != 0 {
		opts.RoundID = &round
	}
	job := testfactory.Job(ctx, t, pool, opts)
	res := map[string]any{"outcome": outcome, "summary": outcome, "requests": []any{}}
	for k, v := range extra {
		res[k] = v
	}
	body, err := json.Marshal(res)
	require.NoError(t, err)
	now := time.Now().UTC()
	fr, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: job, ServerID: server, ClaimedNextCheckAt: now,
		Outcome: outcome, StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: body, Kind: "http"})
	require.NoError(t, err)
	return fr.RunID
}

type eventRow struct {
	Type     string
	Server   string
	State    string
	Previous string
	Runs     []int64
	Resolved bool
}

func events(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []eventRow {
	t.Helper()
	evs, err := queries.ListAlertEvents(ctx, pool, false, nil, 1000)
	require.NoError(t, err)
	out := make([]eventRow, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- { // oldest first
		e := evs[i]
		r := eventRow{Type: e.Type, Runs: e.Runs, Resolved: e.ResolvedAt != nil}
		if e.Server != nil {
			r.Server = *e.Server
		}
		if e.State != nil {
			r.State = *e.State
		}
		if e.PreviousState != nil {
			r.Previous = *e.PreviousState
		}
		out = append(out, r)
	}
	return out
}

// alertState is one server's alert state as the tests read it.
type alertState struct {
	State             string `db:"state"`
	ConsecutiveOK     int    `db:"consecutive_ok"`
	ConsecutiveFailed int    `db:"consecutive_failed"`
}

func state(ctx context.Context, t *testing.T, pool *pgxpool.Pool, slug string) alertState {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT a.state, a.consecutive_ok, a.consecutive_failed
		FROM alert_states AS a JOIN servers AS s ON s.id = a.server_id WHERE s.slug = $1`, slug)
	require.NoError(t, err)
	st, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[alertState])
	require.NoError(t, err, "alert state of %s", slug)
	return st
}

func slugOf(i int) string { return fmt.Sprintf("site-%02d", i) }
