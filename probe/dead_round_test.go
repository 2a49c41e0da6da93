package probe

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// helperRoundURL, in the environment, makes TestHelperRoundThatHangs a round of its own process.
const helperRoundURL = "PROBECTL_TEST_HELPER_ROUND_URL"

// TestHelperRoundThatHangs is not a test: run by TestKilledRoundIsDead in a process of its own, it
// runs a round whose checks never end, says "checking" on stdout once they began, and waits to be
// killed.
func TestHelperRoundThatHangs(t *testing.T) {
	url := os.Getenv(helperRoundURL)
	if url == "" {
		t.Skip("a helper process of TestKilledRoundIsDead")
	}
	db := dbtest.Pool(t, url, dbtest.MaxConns(4))
	began := make(chan struct{}, 2)
	r := &Round{DB: db, Settings: testSettings(FinishTx), testKnobs: testKnobs{heartbeatEvery: 50 * time.Millisecond},
		Checker: &okChecker{during: func(context.Context, check.Target) { began <- struct{}{}; select {} }}}
	go func() {
		<-began
		<-began
		fmt.Println("checking")
	}()
	_, _ = r.Run(context.Background())
}

// A round whose process is killed (-9) is seen as dead once its heartbeat is older than 60 s by
// the database's clock: status says dead instead of running, and its open jobs stay open (their
// lease is not shortened).
func TestKilledRoundIsDead(t *testing.T) {
	ctx := context.Background()
	url := migrated.NewDB(t)
	db := dbtest.Pool(t, url, dbtest.MaxConns(4))
	for range 2 {
		testfactory.Server(ctx, t, db, nil)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRoundThatHangs$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperRoundURL+"="+url)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "checking", strings.TrimSpace(line))

	// The rounds as status reads them, as of the database's clock unless at is given.
	rounds := func(at *time.Time) []queries.RecentRound {
		now, err := queries.StatusNow(ctx, db, at)
		require.NoError(t, err)
		rs, err := queries.StatusRecentRounds(ctx, db, 10, now)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		return rs
	}
	require.Equal(t, queries.RoundRunning, rounds(nil)[0].State, "a round that beats is running")

	// It beats while it runs: its heartbeat moves past its start. (This polls the database's view,
	// as waitForLockWaiters does: the beat is the synchronisation, the loop only observes it.)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var beating bool
		require.NoError(t, db.QueryRow(ctx, "SELECT heartbeat_at > started_at FROM probe_rounds").Scan(&beating))
		if beating {
			break
		}
		require.True(t, time.Now().Before(deadline), "the round never beat")
		time.Sleep(10 * time.Millisecond)
	}

	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no deferred write, no goodbye
	_, _ = cmd.Process.Wait()
	rd := rounds(nil)[0]
	require.NotNil(t, rd.HeartbeatAt)
	require.Equal(t, queries.RoundRunning, rd.State, "within 60 s of its last heartbeat a round is not judged dead")

	// As of 60 s after its last heartbeat (the report's time stands in for the clock).
	later := rd.HeartbeatAt.Add(queries.RoundDeadAfter + time.Second)
	rd = rounds(&later)[0]
	require.Equal(t, queries.RoundDead, rd.State)
	require.Nil(t, rd.FinishedAt)
	require.Equal(t, 2, rd.OpenJobs, "a dead round's jobs stay open until the in-flight window")
	open, stale := 0, 0
	require.NoError(t, audit.EachOpenJob(ctx, db, later, queries.InFlightWindow, func(j audit.OpenJob) error {
		open++
		if j.Stale {
			stale++
		}
		return nil
	}))
	require.Equal(t, 2, open)
	require.Zero(t, stale, "the jobs' lease is not shortened")
}
