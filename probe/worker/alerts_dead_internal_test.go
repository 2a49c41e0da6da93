package worker

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
)

// A round whose heartbeat stopped is found dead by the leader's tick, which emits one round.dead
// alert for it: the idle leader inserts a tick for it, repeated ticks emit nothing more, a round
// still beating emits nothing, and two callers at once (another leader, 'alerts deliver') emit it
// once between them.
func TestTheTickEmitsOneRoundDeadPerRoundWhoseHeartbeatStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	p := newProcess(Config{Pool: pool, Log: testLog(t), MaxWorkers: 1, Version: "dev"})
	inserts := func() bool { args, _ := p.tickJob(); return args != nil }
	round := func(heartbeat time.Duration) int64 {
		hb := time.Now().Add(-heartbeat)
		id := testfactory.Round(ctx, t, pool, &testfactory.RoundOpts{HeartbeatAt: &hb})
		srv := testfactory.Server(ctx, t, pool, nil)
		testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv, RoundID: &id})
		return id
	}
	deadEvents := func(round int64) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM alert_events WHERE type = 'round.dead' AND round_id = $1`,
			round).Scan(&n))
		return n
	}

	alive := round(time.Second)
	require.False(t, inserts(), "a round beating: nothing to do")
	dead := round(2 * time.Minute)
	require.True(t, inserts(), "a round dead and not judged: the idle leader ticks")

	for range 3 {
		_, err := Tick(ctx, pool, "dev", "", false, nil)
		require.NoError(t, err)
	}
	require.Equal(t, 1, deadEvents(dead), "one round.dead however many ticks")
	require.Zero(t, deadEvents(alive))
	require.False(t, inserts(), "judged: the leader is idle again")
	var data struct {
		OpenJobs int `json:"open_jobs"`
	}
	require.NoError(t, pool.QueryRow(ctx, `SELECT data FROM alert_events WHERE type = 'round.dead'`).Scan(&data))
	require.Equal(t, 1, data.OpenJobs)

	// Two callers at once: the second waits for the first's mark and finds the round judged.
	second := round(2 * time.Minute)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	n, err := alerts.EmitDeadRounds(ctx, tx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	other := make(chan int, 1)
	go func() {
		n, err := alerts.EmitDeadRounds(ctx, pool)
		if err != nil {
			n = -1
		}
		other <- n
	}()
	// Commit only once the other caller waits on the mark: it then must find the round judged.
	dbtest.WaitForLockWait(t, pool, "", "the other caller never waited on the mark")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, 0, <-other)
	require.Equal(t, 1, deadEvents(second))
}
