package probe

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// writeSpool writes entries as one spool file of dir (0700) and returns its path.
func writeSpool(t *testing.T, dir string, entries ...spoolEntry) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "round-1-pid-1-test"+spoolExt)
	var data []byte
	for _, e := range entries {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		data = append(append(data, line...), '\n')
	}
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// lostClaimEntry is the spooled result of a claim of server serverID as job jobID in round
// roundID, requested at requested: a claim the database no longer holds.
func lostClaimEntry(jobID, serverID, roundID int64, requested time.Time) spoolEntry {
	start := requested.Add(time.Second)
	return spoolEntry{RoundID: roundID, Slug: "lost", Finish: FinishTx, JobID: jobID, ServerID: serverID,
		RequestedAt: &requested, ClaimedNextCheckAt: requested.Add(queries.InFlightWindow), Outcome: "ok",
		StartedAt: start, CheckFinishedAt: start.Add(time.Second), Requests: 1,
		Result: json.RawMessage(`{"outcome":"ok","summary":"lost claim"}`), SpooledAt: start, Cause: "failover"}
}

type serverRuns struct {
	Runs     int `db:"runs"`
	Restored int `db:"restored"`
}

// runsOf counts the runs stored for server id, and those under a restored job.
func runsOf(t *testing.T, db queries.DBTX, id int64) serverRuns {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT count(*)::int AS runs,
	       count(rj.job_id)::int AS restored
	  FROM probe_runs AS r LEFT JOIN probe_restored_jobs AS rj ON rj.job_id = r.job_id
	 WHERE r.server_id = $1`, id)
	require.NoError(t, err)
	out, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[serverRuns])
	require.NoError(t, err)
	return out
}

// After an asynchronous failover the new primary gives a lost claim's job id to another server's
// claim. The spooled result of the lost claim is not that job's: it is neither counted as stored
// nor dropped, but restored under a job of its own, once; the other server's run is untouched.
// (Matched by job id alone, the replay counted it "already stored" and deleted it.)
func TestASpooledResultWhoseJobIdNowBelongsToAnotherServerIsRestoredNotDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	otherServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	// The new primary's claim of the other server, under the id the lost claim had.
	reused := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: otherServer, RoundID: &round,
		FinishedAt: testfactory.Ptr(time.Now())})
	testfactory.Run(ctx, t, db, &testfactory.RunOpts{JobID: reused, ServerID: otherServer})
	requested := time.Now().Add(-2 * time.Minute).UTC().Truncate(time.Microsecond)
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir, lostClaimEntry(reused, lostServer, round, requested))
	saved, err := os.ReadFile(path)
	require.NoError(t, err)

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Zero(t, rec.AlreadyStored, "another server's run is not this result's: problems %v", rec.Problems)
	require.Equal(t, 1, rec.Stored)
	require.Equal(t, 1, rec.Restored)
	require.Equal(t, serverRuns{Runs: 1, Restored: 1}, runsOf(t, db, lostServer), "the result is stored, marked restored")
	require.Equal(t, serverRuns{Runs: 1}, runsOf(t, db, otherServer), "the other server's run is untouched")

	var next time.Time
	require.NoError(t, db.QueryRow(ctx, `SELECT next_check_at FROM servers WHERE id = $1`, lostServer).Scan(&next))
	require.True(t, next.After(time.Now()), "the server moved on as the lost finish would have moved it: %v", next)

	// Replayed again (the file restored from a backup): the restore is found, nothing is written.
	require.NoError(t, os.WriteFile(path, saved, 0o600))
	rec, err = Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, Recovery{Dir: dir, Files: 1, AlreadyStored: 1}, rec)
	require.Equal(t, serverRuns{Runs: 1, Restored: 1}, runsOf(t, db, lostServer))
}

// A lost claim whose id the new primary has not handed out yet is restored under its own id, so
// that its signed envelope (which names the job) still verifies, and the identity is moved past
// it: the next claim gets another id.
func TestALostClaimWithAFreeIdIsRestoredUnderItAndTheNextClaimGetsAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	const lostID = 5000
	requested := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	dir := filepath.Join(t.TempDir(), "spool")
	writeSpool(t, dir, lostClaimEntry(lostID, lostServer, round, requested))

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, Recovery{Dir: dir, Files: 1, Stored: 1, Restored: 1}, rec)
	job, found, err := queries.GetReplayedJob(ctx, db, lostID)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, lostServer, job.ServerID)
	require.True(t, job.Stored)
	require.True(t, job.RequestedAt.Equal(requested))

	testfactory.Server(ctx, t, db, nil)
	claimed, err := queries.Claim(ctx, db, queries.ClaimParams{RoundID: round, Limit: 5})
	require.NoError(t, err)
	require.Len(t, claimed, 1, "the restored server is not due again; the other is")
	require.Greater(t, claimed[0].JobID, int64(lostID))
}

// The same server and round under the same id but claimed at another time is another claim (the
// round's id was reused too): not this result's job.
func TestASpooledResultIsMatchedByItsRequestedTimeToo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	server := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	job := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: server, RoundID: &round,
		RequestedAt: testfactory.Ptr(time.Now()), FinishedAt: testfactory.Ptr(time.Now())})
	testfactory.Run(ctx, t, db, &testfactory.RunOpts{JobID: job, ServerID: server})
	dir := filepath.Join(t.TempDir(), "spool")
	writeSpool(t, dir, lostClaimEntry(job, server, round, time.Now().Add(-5*time.Minute).UTC()))

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Zero(t, rec.AlreadyStored)
	require.Equal(t, 1, rec.Restored)
	require.Equal(t, serverRuns{Runs: 2, Restored: 1}, runsOf(t, db, server))
}

// A record written before records carried the requested time, whose job id now holds another
// server's job, is kept for a person and said: never counted, never dropped, never stored on the
// other server's job.
func TestAnOldRecordWhoseJobIsAnotherClaimIsKeptAndSaid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	otherServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	reused := testfactory.Job(ctx, t, db, &testfactory.JobOpts{ServerID: otherServer, RoundID: &round,
		FinishedAt: testfactory.Ptr(time.Now())})
	testfactory.Run(ctx, t, db, &testfactory.RunOpts{JobID: reused, ServerID: otherServer})
	e := lostClaimEntry(reused, lostServer, round, time.Now())
	e.RequestedAt = nil
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir, e)

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Zero(t, rec.AlreadyStored)
	require.Zero(t, rec.Stored)
	require.Empty(t, rec.Problems)
	require.Len(t, rec.SetAside, 1)
	require.Contains(t, rec.SetAside[0], "kept for a person to read")
	require.FileExists(t, path+asideExt, "the record is kept, in a file no replay reads")
	require.Equal(t, serverRuns{}, runsOf(t, db, lostServer))
	require.Equal(t, serverRuns{Runs: 1}, runsOf(t, db, otherServer))
}

// A check in flight when the database fails over finishes on the new primary, which may have lost
// its claim and given the job's id to another server's claim. The finish must not store the
// result as that job's run (nor finish that job, nor advance that server): it finds no claim of
// its server at its time, spools the result, and the next replay restores it under a job of its
// own. (Matched by the id alone, probe_finish stored it on the other server's job.)
func TestAFinishWhoseJobIdNowBelongsToAnotherServerDoesNotStoreOnIt(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{FinishTx, FinishAdvanceFirst} {
		t.Run(finish, func(t *testing.T) {
			t.Parallel()
			finishOnAReusedJobID(t, finish)
		})
	}
}

func finishOnAReusedJobID(t *testing.T, finish string) {
	ctx := context.Background()
	db := testDB(t)
	lost := dueServers(t, db, 1)[0]
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	other := testfactory.Server(ctx, t, db, &testfactory.ServerOpts{NextCheckAt: &later})
	s := testSettings(finish)
	s.ClaimLimit = 1
	dir := filepath.Join(t.TempDir(), "spool")
	var reused int64
	checker := &okChecker{during: func(ctx context.Context, tg check.Target) {
		// The failover: the claim is gone, and its id is the other server's claim now.
		require.NoError(t, db.QueryRow(ctx, `DELETE FROM probe_jobs WHERE server_id = $1 RETURNING id`, tg.ServerID).Scan(&reused))
		_, err := db.Exec(ctx, `INSERT INTO probe_jobs (id, server_id, requested_at) OVERRIDING SYSTEM VALUE
		                        VALUES ($1, $2, now())`, reused, other)
		require.NoError(t, err)
	}}
	r := &Round{DB: db, Settings: s, Checker: checker, SpoolDir: dir}
	sum, err := r.Run(ctx)
	require.Error(t, err, "the round says its result waits in the spool")
	require.Equal(t, 1, sum.Spooled, "problems: %v", sum.Problems)
	require.Equal(t, serverRuns{}, runsOf(t, db, other), "the other server's claim got no run of this check")
	var next time.Time
	var open bool
	require.NoError(t, db.QueryRow(ctx, `SELECT s.next_check_at, j.finished_at IS NULL FROM servers s
	  JOIN probe_jobs j ON j.server_id = s.id WHERE s.id = $1`, other).Scan(&next, &open))
	require.True(t, open, "the other server's claim is still open")
	require.True(t, next.Equal(later), "the other server was not advanced")

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Restored, "problems: %v", rec.Problems)
	require.Equal(t, serverRuns{Runs: 1, Restored: 1}, runsOf(t, db, lost))
}

// A spooled or journaled claim time is the file's word. One in the future (a clock gone wrong, a
// corrupt line) must not hold the server's schedule off: the restore takes it as now, so the
// server is due again one interval from now at the latest, and the match still finds the restore.
func TestARestoreTakesAClaimTimeInTheFutureAsNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	future := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Microsecond)
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir, lostClaimEntry(7000, lostServer, round, future))
	saved, err := os.ReadFile(path)
	require.NoError(t, err)

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Restored, "problems %v", rec.Problems)
	var next, requested time.Time
	var interval time.Duration
	require.NoError(t, db.QueryRow(ctx, `SELECT s.next_check_at, s.check_interval, j.requested_at
		FROM servers AS s JOIN probe_jobs AS j ON j.server_id = s.id WHERE s.id = $1`, lostServer).Scan(&next, &interval, &requested))
	require.False(t, requested.After(time.Now()), "the restored job is not requested in the future: %v", requested)
	require.False(t, next.After(time.Now().Add(interval)), "the schedule is not held off past one interval: %v", next)

	require.NoError(t, os.WriteFile(path, saved, 0o600))
	rec, err = Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 1, rec.AlreadyStored, "matched by the original claim time, the restore is not repeated")
}

// runs recover replays the journals a failover left, not only the spool: a host whose rounds
// stopped after a failover restores by hand what its journals hold (here a journal written on a
// timeline the database is not on).
func TestRecoverAllReplaysTheJournalsAFailoverLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	requested := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	dir, _ := lostJournal(t, lostClaimEntry(8000, lostServer, round, requested))

	rec, err := RecoverAll(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 1, rec.Restored, "problems %v", rec.Problems)
	require.Equal(t, serverRuns{Runs: 1, Restored: 1}, runsOf(t, db, lostServer))
}

// A journal line cut short (a write that failed part way, or a crash mid-line) is said once, its
// whole lines stored, and its file set aside for a person to read under a name no replay reads:
// before, the replay said nothing and kept the file, to be read again at every round. Said as a
// round's problem instead, it would fail every round (and worker invocation) after it.
func TestAJournalsCutLineIsSaidOnceAndItsFileSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	requested := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	dir, path := journalWithACutLine(t, lostClaimEntry(8001, lostServer, round, requested))
	files := []string{path}
	name := filepath.Base(path)

	// A round's replay: nothing for the round to fail on; the file set aside, and said.
	jr, err := ReplayJournals(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 1, jr.Restored, "the whole line is stored: %v", jr.Problems)
	require.Empty(t, jr.Problems)
	require.Equal(t, []string{name + " is set aside as " + name + ".bad for a person to read " +
		"(1 of its results stored, or there already): line 2 does not hold a result"}, jr.SetAside)
	require.NoFileExists(t, files[0])
	require.FileExists(t, files[0]+".bad")

	// Said once: the next replay (here a person's runs recover) reads nothing of it.
	rec, err := RecoverAll(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Empty(t, rec.Problems)
	require.Empty(t, rec.SetAside)
	require.Equal(t, 0, rec.Stored+rec.AlreadyStored)
	require.FileExists(t, files[0]+".bad")
}

// runs recover says a journal it sets aside, apart from its problems: a person asked.
func TestRecoverAllSaysTheJournalItSetsAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "journal-tl999-round-1-pid-1-00000000"+journalExt)
	require.NoError(t, os.WriteFile(path, []byte(`{"job_`), 0o600))

	rec, err := RecoverAll(ctx, db, dir, nil)
	require.NoError(t, err)
	name := filepath.Base(path)
	require.Equal(t, []string{name + " is set aside as " + name + ".bad for a person to read " +
		"(0 of its results stored, or there already): line 1 does not hold a result"}, rec.SetAside)
	require.Empty(t, rec.Problems)
}

// A journaled result kept for a person (here one whose claim vanished and whose record predates
// the requested time that would restore it) is said once with its journal set aside, as a cut
// line is: no later replay could store it, and said as a round's problem it would fail every
// round after it.
func TestAJournalsKeptResultIsSaidOnceAndItsFileSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	server := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	e := lostClaimEntry(8002, server, round, time.Now().Add(-time.Minute).UTC())
	e.RequestedAt = nil
	dir, _ := lostJournal(t, e)

	jr, err := ReplayJournals(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Empty(t, jr.Problems)
	require.Equal(t, 0, jr.Left)
	require.Len(t, jr.SetAside, 1)
	require.Contains(t, jr.SetAside[0], ".journal.bad for a person to read (0 of its results stored, or there already): "+
		"journaled job 8002 (lost): the database holds no job 8002")
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.True(t, strings.HasSuffix(files[0], journalExt+asideExt), files[0])
	require.Equal(t, serverRuns{}, runsOf(t, db, server))
}

// lostJournal writes a journal of another timeline (999) than the database's holding e, in a
// spool directory of its own: what a failover left.
func lostJournal(t *testing.T, e spoolEntry) (dir, path string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	j := &journal{dir: dir, roundID: e.RoundID, timeline: 999}
	require.NoError(t, j.put(e))
	require.NoError(t, j.close())
	files, err := filepath.Glob(filepath.Join(dir, "*"+journalExt))
	require.NoError(t, err)
	require.Len(t, files, 1)
	return dir, files[0]
}

// journalWithACutLine is lostJournal, then the start of a line cut short.
func journalWithACutLine(t *testing.T, e spoolEntry) (dir, path string) {
	t.Helper()
	dir, path = lostJournal(t, e)
	appendCutLine(t, path)
	return dir, path
}

// A round whose replay sets a journal aside says so in its summary, not as a problem: the round
// completes.
func TestARoundSaysTheJournalItSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	server := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	dir, path := journalWithACutLine(t, lostClaimEntry(8004, server, round, time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)))

	r := &Round{DB: db, Settings: testSettings(FinishTx), Checker: &okChecker{}, SpoolDir: dir}
	sum, err := r.Run(ctx)
	require.NoError(t, err)
	require.Empty(t, sum.Problems)
	require.Len(t, sum.JournalSetAside, 1)
	require.True(t, strings.HasPrefix(sum.JournalSetAside[0], filepath.Base(path)+" is set aside as "), sum.JournalSetAside[0])
}

// A set-aside journal's line quotes at most setAsideShown of the lines no replay can store, and
// counts the rest: a journal can hold a round's worth of them.
func TestASetAsideJournalsLineIsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "journal-tl999-round-1-pid-1-00000000"+journalExt)
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("{\"job_\n", 50)), 0o600))

	jr, err := ReplayJournals(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Len(t, jr.SetAside, 1)
	require.True(t, strings.HasSuffix(jr.SetAside[0], "line 3 does not hold a result; and 47 more"), jr.SetAside[0])
	require.Equal(t, 3, strings.Count(jr.SetAside[0], "does not hold a result"))
}

// A spool file's line cut short (a crash in the middle of its write, never acknowledged to its
// round) is said once, the file's whole lines stored, and the file set aside for a person to read
// under a name no replay reads, as a journal's is. Before, the file stayed and its cut line was a
// problem of every replay: every round after it (and every worker invocation) ended incomplete,
// exit 3, until a person removed the file.
func TestASpoolFilesCutLineIsSaidOnceAndItsFileSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	server := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir, lostClaimEntry(8101, server, round, time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)))
	appendCutLine(t, path)
	name := filepath.Base(path)

	r := &Round{DB: db, Settings: testSettings(FinishTx), Checker: &okChecker{}, SpoolDir: dir}
	sum, err := r.Run(ctx)
	require.NoError(t, err, "nothing left for the round to fail on")
	require.Empty(t, sum.Problems)
	require.Equal(t, 1, sum.Recovered.Stored, "the whole line is stored")
	require.Equal(t, []string{name + " is set aside as " + name + ".bad for a person to read " +
		"(1 of its results stored, or there already): line 2 does not hold a result"}, sum.Recovered.SetAside)
	require.NoFileExists(t, path)
	require.FileExists(t, path+asideExt)

	// Said once: the next round reads nothing of it, and completes.
	sum, err = r.Run(ctx)
	require.NoError(t, err)
	require.Empty(t, sum.Problems)
	require.Empty(t, sum.Recovered.SetAside)
	c, err := InspectSpool(dir)
	require.NoError(t, err)
	require.Equal(t, SpoolContents{Dir: dir, SetAside: 1}, c, "status shows it until a person removes it")
	require.Equal(t, serverRuns{Runs: 1, Restored: 1}, runsOf(t, db, server), "the restore moved the server on: not due again")
}

// A spooled result kept for a person (its claim vanished and its record predates the requested
// time that would restore it) is said once with its file set aside, once every other result of
// the file is stored: no later replay could store it.
func TestASpoolFilesKeptResultIsSaidOnceAndItsFileSetAside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	lostServer := testfactory.Server(ctx, t, db, nil)
	otherServer := testfactory.Server(ctx, t, db, nil)
	round := testfactory.Round(ctx, t, db, nil)
	requested := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	kept := lostClaimEntry(8102, lostServer, round, requested)
	kept.RequestedAt = nil
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir, kept, lostClaimEntry(8103, otherServer, round, requested))

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Empty(t, rec.Problems)
	require.Zero(t, rec.Left)
	require.Equal(t, 1, rec.Restored)
	require.Len(t, rec.SetAside, 1)
	require.Contains(t, rec.SetAside[0], ".jsonl.bad for a person to read (1 of its results stored, or there already): "+
		"spooled job 8102 (lost): the database holds no job 8102")
	require.FileExists(t, path+asideExt)
	require.Equal(t, serverRuns{}, runsOf(t, db, lostServer))

	rec, err = Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Empty(t, rec.Problems)
	require.Empty(t, rec.SetAside)
}

// A spool file or journal whose result could not be stored now, for a reason that is not the
// result's (here a trigger planted to refuse its run), stays where the next replay reads it, its
// cut line too: set aside, its result would be read by no replay again. A spool file's replay
// says the cut line with it, a journal's waits.
func TestAFileWithAResultLeftStaysForTheNextReplay(t *testing.T) {
	t.Parallel()
	type replayed struct {
		left, restored     int
		problems, setAside []string
	}
	cases := []struct {
		name string
		// write puts e, then a line cut short, in a file of a new spool directory
		write    func(t *testing.T, e spoolEntry) (dir, path string)
		replay   func(t *testing.T, ctx context.Context, db queries.DBTX, dir string) replayed
		problems []string // what the first replay's problems say, one each
	}{
		{"a journal", journalWithACutLine, func(t *testing.T, ctx context.Context, db queries.DBTX, dir string) replayed {
			jr, err := ReplayJournals(ctx, db, dir, nil)
			require.NoError(t, err)
			return replayed{jr.Left, jr.Restored, jr.Problems, jr.SetAside}
		}, []string{"journaled job 8003 (lost) from "}},
		{"a spool file", func(t *testing.T, e spoolEntry) (dir, path string) {
			dir = filepath.Join(t.TempDir(), "spool")
			path = writeSpool(t, dir, e)
			appendCutLine(t, path)
			return dir, path
		}, func(t *testing.T, ctx context.Context, db queries.DBTX, dir string) replayed {
			rec, err := Recover(ctx, db, dir, nil)
			require.NoError(t, err)
			return replayed{rec.Left, rec.Restored, rec.Problems, rec.SetAside}
		}, []string{"job 8003 (lost) from ", "line 2 does not hold a result"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testDB(t)
			server := testfactory.Server(ctx, t, db, nil)
			round := testfactory.Round(ctx, t, db, nil)
			allowRuns := refuseRuns(t, db)
			dir, path := c.write(t, lostClaimEntry(8003, server, round, time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)))

			got := c.replay(t, ctx, db, dir)
			require.Equal(t, 1, got.left)
			require.Len(t, got.problems, len(c.problems))
			for i, p := range c.problems {
				require.Contains(t, got.problems[i], p)
			}
			require.Empty(t, got.setAside)
			require.FileExists(t, path)

			allowRuns()
			got = c.replay(t, ctx, db, dir)
			require.Equal(t, 1, got.restored, "%v", got.problems)
			require.Empty(t, got.problems)
			require.Len(t, got.setAside, 1, "the cut line, said once the rest is stored")
			require.FileExists(t, path+asideExt)
		})
	}
}

// appendCutLine appends to the spool or journal file path the start of a line cut short.
func appendCutLine(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"job_id":80`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// refuseRuns makes db refuse every run stored from now (a trigger planted for the test), until
// the function it returns is called.
func refuseRuns(t *testing.T, db queries.DBTX) (allow func()) {
	t.Helper()
	_, err := db.Exec(context.Background(), `CREATE FUNCTION refuse_run() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse_run BEFORE INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION refuse_run()`)
	require.NoError(t, err)
	return func() {
		_, err := db.Exec(context.Background(), `DROP TRIGGER refuse_run ON probe_runs`)
		require.NoError(t, err)
	}
}

// A set-aside file of the same name already there (a person's copy) is not replaced: the spool
// file stays where every replay reads it, and the replay says why, with what it could not store.
func TestASpoolFileIsNotSetAsideOverAnotherOfItsName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	dir := filepath.Join(t.TempDir(), "spool")
	path := writeSpool(t, dir)
	appendCutLine(t, path)
	require.NoError(t, os.WriteFile(path+asideExt, []byte("a person's copy\n"), 0o600))

	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Empty(t, rec.SetAside)
	require.Len(t, rec.Problems, 1)
	require.Contains(t, rec.Problems[0], "is there already (move it away); it stays where every replay reads it: line 1 does not hold a result")
	require.FileExists(t, path)
	kept, err := os.ReadFile(path + asideExt)
	require.NoError(t, err)
	require.Equal(t, "a person's copy\n", string(kept))
}
