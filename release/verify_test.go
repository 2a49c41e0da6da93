package release_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// scene is a database with a release that went live two hours ago, a registered signing key and
// a few servers: rounds are added to it with round().
type scene struct {
	t       *testing.T
	ctx     context.Context
	pool    *pgxpool.Pool
	signer  *attest.Signer
	release release.Release
	live    time.Time
	servers []sceneServer
}

type sceneServer struct {
	id        int64
	slug, url string
}

func newScene(t *testing.T, servers int) *scene {
	t.Helper()
	pool := tmpl.Pool(t)
	ctx := t.Context()
	live := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
	rec, err := release.Record(ctx, pool, release.RecordRequest{Version: "v2", Settings: parallel,
		WaysBack: []release.Way{release.WayPrevious}, Actor: "ana", Now: &live})
	require.NoError(t, err)
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	signer := attest.NewSigner(priv)
	require.NoError(t, queries.RegisterSigningKey(ctx, pool, signer.KeyID(), signer.PublicKey()))
	s := &scene{t: t, ctx: ctx, pool: pool, signer: signer, release: rec.Release, live: live}
	never := live.Add(24 * time.Hour)
	for i := range servers {
		slug := fmt.Sprintf("srv-%d", i)
		url := fmt.Sprintf("https://%s.example/mcp", slug)
		id := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: slug, URL: url, Kind: "mcp", NextCheckAt: &never})
		s.servers = append(s.servers, sceneServer{id: id, slug: slug, url: url})
	}
	return s
}

// job says how one job of a round is planted; the zero value is a clean, signed, finished job.
type job struct {
	server     int
	open       bool   // left open: never finished, no run
	noRun      bool   // finished, but its run was never stored
	noEnvelope bool   // run stored without its envelope
	tamper     bool   // envelope's payload changed after signing
	outcome    string // the job's outcome when finished ("": ok)
	// after, when set, requests the job this long after the previous job of the round finished.
	after time.Duration
}

// round plants a round that started `at` after the release went live, with one job per spec,
// 100 ms apart, each taking one second.
func (s *scene) round(at time.Duration, finished bool, jobs ...job) int64 {
	s.t.Helper()
	start := s.live.Add(at)
	opts := &testfactory.RoundOpts{ReleaseID: &s.release.ID, Version: "v2", StartedAt: &start}
	if finished {
		end := start.Add(time.Minute)
		opts.FinishedAt = &end
	} else {
		// Alive: it beat a moment ago (roundDead plants the other kind).
		opts.HeartbeatAt = testfactory.Ptr(time.Now())
	}
	roundID := testfactory.Round(s.ctx, s.t, s.pool, opts)
	next := start
	for i, spec := range jobs {
		srv := s.servers[spec.server]
		requested := next.Add(100 * time.Millisecond)
		if spec.after > 0 {
			requested = next.Add(spec.after)
		}
		done := requested.Add(time.Second)
		next = done
		jo := &testfactory.JobOpts{ServerID: srv.id, RoundID: &roundID, Invocation: testfactory.Ptr(i % 3), RequestedAt: &requested}
		if !spec.open {
			jo.FinishedAt, jo.Outcome = &done, spec.outcome
		}
		jobID := testfactory.Job(s.ctx, s.t, s.pool, jo)
		if spec.open || spec.noRun {
			continue
		}
		ro := &testfactory.RunOpts{JobID: jobID, ServerID: srv.id, StartedAt: &requested, FinishedAt: &done}
		if !spec.noEnvelope {
			ro.Envelope = s.sign(jobID, roundID, i%3, srv, requested, done, spec.tamper)
		}
		testfactory.Run(s.ctx, s.t, s.pool, ro)
	}
	return roundID
}

func (s *scene) sign(jobID, roundID int64, invocation int, srv sceneServer, started, done time.Time, tamper bool) json.RawMessage {
	s.t.Helper()
	env, err := s.signer.Sign(attest.Run{JobID: jobID, ServerID: srv.id, Slug: srv.slug, URL: srv.url, Kind: "mcp",
		RoundID: roundID, Invocation: invocation, Result: check.Result{Outcome: check.OutcomeOK, Summary: "2 tools",
			Requests: []check.Request{}, StartedAt: started, FinishedAt: done}})
	require.NoError(s.t, err)
	if !tamper {
		return env
	}
	// Change what the probe saw after it was signed: the signature no longer verifies.
	var e map[string]any
	require.NoError(s.t, json.Unmarshal(env, &e))
	payload, err := base64.StdEncoding.DecodeString(e["payload"].(string))
	require.NoError(s.t, err)
	var st map[string]any
	require.NoError(s.t, json.Unmarshal(payload, &st))
	st["predicate"].(map[string]any)["result"].(map[string]any)["summary"] = "0 tools"
	payload, err = json.Marshal(st)
	require.NoError(s.t, err)
	e["payload"] = base64.StdEncoding.EncodeToString(payload)
	out, err := json.Marshal(e)
	require.NoError(s.t, err)
	return out
}

// clean plants the two clean rounds every defect case starts from: three servers each.
// exec runs a statement of the test's own (a misconfiguration planted, or taken back).
func (s *scene) exec(sql string) {
	s.t.Helper()
	_, err := s.pool.Exec(s.ctx, sql)
	require.NoError(s.t, err)
}

func (s *scene) clean() {
	s.round(time.Minute, true, job{server: 0}, job{server: 1}, job{server: 2})
	s.round(6*time.Minute, true, job{server: 3}, job{server: 4}, job{server: 5})
}

func (s *scene) verify(req release.VerifyRequest) *release.Report {
	s.t.Helper()
	rep, err := release.Verify(s.ctx, s.pool, req)
	require.NoError(s.t, err)
	return rep
}

// statuses maps each check to its status.
func statuses(rep *release.Report) map[string]string {
	out := map[string]string{}
	for _, c := range rep.Checks {
		out[c.Name] = c.Status
	}
	return out
}

// notPassing lists the checks that did not pass, sorted.
func notPassing(rep *release.Report) []string {
	out := []string{}
	for _, c := range rep.Checks {
		if c.Status != release.VerdictPass {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

func checkNamed(t *testing.T, rep *release.Report, name string) release.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", name, rep.Checks)
	return release.Check{}
}

func TestVerifyPassesCleanRounds(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, release.VerdictPass, rep.Verdict, "%+v", rep.Checks)
	require.Empty(t, notPassing(rep))
	require.Len(t, rep.Checks, 10, "every check ran")
	require.Len(t, rep.Rounds, 2)
	for _, r := range rep.Rounds {
		require.Equal(t, 3, r.Jobs)
		require.Equal(t, 3, r.Runs)
		require.Equal(t, 3, r.Servers)
		require.Empty(t, r.SecondClaims)
	}
	require.Equal(t, s.release.ID, rep.Release.ID)
	require.Equal(t, s.live, rep.Since)
}

func TestVerifyFailsOnEachPlantedDefect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		round2  []job
		failing []string
	}{
		{"a server claimed again in the next round fails only the duplicates check, as in the incident",
			[]job{{server: 3}, {server: 0}, {server: 5}}, []string{release.CheckDuplicates}},
		{"a server claimed twice in one round, 0.168 s after its first job finished",
			[]job{{server: 3}, {server: 3, after: 168 * time.Millisecond}, {server: 5}},
			[]string{release.CheckDuplicates, release.CheckJobsRunsServers}},
		{"a job without a run", []job{{server: 3}, {server: 4, noRun: true}, {server: 5}},
			[]string{release.CheckJobsRunsServers}},
		{"a run without an envelope", []job{{server: 3}, {server: 4, noEnvelope: true}, {server: 5}},
			[]string{release.CheckEnvelopesPresent}},
		{"a tampered envelope", []job{{server: 3}, {server: 4, tamper: true}, {server: 5}},
			[]string{release.CheckEnvelopesValid}},
		{"a job left open in a finished round", []job{{server: 3}, {server: 4, open: true}, {server: 5}},
			[]string{release.CheckJobsRunsServers, release.CheckOpenJobs}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, 6)
			s.round(time.Minute, true, job{server: 0}, job{server: 1}, job{server: 2})
			s.round(6*time.Minute, true, tc.round2...)

			rep := s.verify(release.VerifyRequest{})

			require.Equal(t, release.VerdictFail, rep.Verdict)
			sort.Strings(tc.failing)
			require.Equal(t, tc.failing, notPassing(rep))
		})
	}
}

func TestVerifyNamesTheServersAndShowsTheGapOfASecondClaim(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.round(time.Minute, true, job{server: 0}, job{server: 1}, job{server: 2})
	s.round(6*time.Minute, true, job{server: 3}, job{server: 3, after: 168 * time.Millisecond}, job{server: 5})

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, []string{"srv-3"}, checkNamed(t, rep, release.CheckDuplicates).Items)
	claims := rep.Rounds[1].SecondClaims
	require.Len(t, claims, 1)
	require.Equal(t, "srv-3", claims[0].Slug)
	require.InDelta(t, 0.168, *claims[0].GapAfterFinishSeconds, 0.0005)
	require.Empty(t, rep.Rounds[0].SecondClaims)
}

func TestVerifyCountsTheLastJobBeforeTheRelease(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	before := s.live.Add(-time.Minute)
	done := before.Add(time.Second)
	testfactory.Job(s.ctx, t, s.pool, &testfactory.JobOpts{ServerID: s.servers[0].id, RequestedAt: &before, FinishedAt: &done})
	s.clean() // srv-0's first job after the release is 2 minutes after the one before it

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, release.VerdictFail, rep.Verdict)
	require.Equal(t, []string{"srv-0"}, checkNamed(t, rep, release.CheckDuplicates).Items)
}

func TestVerifyIsInconclusiveWithoutData(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant func(s *scene)
		check string
	}{
		{"no round has started since the release", func(s *scene) {}, release.CheckRounds},
		{"only one of two rounds has started", func(s *scene) {
			s.round(time.Minute, true, job{server: 0})
		}, release.CheckRounds},
		{"the second round is still running", func(s *scene) {
			s.round(time.Minute, true, job{server: 0})
			s.round(6*time.Minute, false, job{server: 1, open: true})
		}, release.CheckRounds},
		{"two rounds without a single job", func(s *scene) {
			s.round(time.Minute, true)
			s.round(6*time.Minute, true)
		}, release.CheckJobs},
		{"the rounds before the release do not count", func(s *scene) {
			s.round(-30*time.Minute, true, job{server: 0})
			s.round(-20*time.Minute, true, job{server: 1})
		}, release.CheckRounds},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t, 2)
			tc.plant(s)

			rep := s.verify(release.VerifyRequest{})

			require.Equal(t, release.VerdictInconclusive, rep.Verdict, "%+v", rep.Checks)
			require.Equal(t, release.VerdictInconclusive, statuses(rep)[tc.check])
		})
	}
}

func TestVerifyFailsWhenTheDatabaseRunsOtherFunctions(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	_, err := s.pool.Exec(s.ctx, "DROP FUNCTION probe_finish") // test-only: plant the drift
	require.NoError(t, err)

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
	check := checkNamed(t, rep, release.CheckFunctions)
	require.Equal(t, []string{"probe_finish: missing from the database"}, check.Items)
	n := len(rep.Functions.Shipped)
	require.Contains(t, rep.Functions.Shipped, "probe_finish")
	require.Equal(t, []string{"probe_finish"}, rep.Functions.Missing)
	require.Equal(t, []string{}, rep.Functions.Changed)
	require.True(t, strings.HasPrefix(check.Detail, fmt.Sprintf("%d of %d as shipped (1 missing, 0 changed): ", n-1, n)), check.Detail)
}

// The functions line says counts, not every name (a table row fits a terminal); the names are in
// the figures (-o json).
func TestVerifySaysHowManyFunctionsAreAsShipped(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()

	rep := s.verify(release.VerifyRequest{})

	check := checkNamed(t, rep, release.CheckFunctions)
	n := len(rep.Functions.Shipped)
	require.Greater(t, n, 2)
	require.Contains(t, rep.Functions.Shipped, "probe_claim")
	require.Equal(t, fmt.Sprintf("%d of %d as shipped", n, n), check.Detail)
	require.Equal(t, []string{}, rep.Functions.Missing)
	require.Equal(t, []string{}, rep.Functions.Changed)
}

// After a rollback, this binary may meet the functions a later release's migration added: an
// overload of probe_claim with as many arguments as one it ships (other types) is a difference
// the functions check reports, not an error that stops verify.
func TestVerifyReportsAnOverloadItDoesNotShipAsADifference(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	var nargs int
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT max(pronargs)::int FROM pg_proc WHERE proname = 'probe_claim'").Scan(&nargs))
	args := strings.TrimSuffix(strings.Repeat("text, ", nargs), ", ")
	_, err := s.pool.Exec(s.ctx, "CREATE FUNCTION probe_claim("+args+") RETURNS integer LANGUAGE sql AS $probe$ SELECT 1 $probe$")
	require.NoError(t, err) // test-only: plant a later release's overload

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
	items := checkNamed(t, rep, release.CheckFunctions).Items
	require.Len(t, items, 1)
	require.Contains(t, items[0], "probe_claim: the database has 3 form(s) (overloads), this probectl ships 2")
	require.Equal(t, []string{"probe_claim"}, rep.Functions.Changed)
}

func TestVerifyFailsAReleaseWhoseSettingsFailTheLeaseCheck(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	// A release written by hand (or by an older binary) that Record would have refused.
	err := queries.InTx(s.ctx, s.pool, func(tx pgx.Tx) error {
		_, err := queries.InsertRelease(s.ctx, tx, queries.InsertReleaseParams{Version: "v0",
			Carried: settings.Carried{Fanout: 19, ClaimLimit: 5, Concurrency: 3, MinSpacing: settings.Duration(10 * time.Minute),
				RequestTimeout: settings.Duration(time.Minute), MaxDuration: settings.Duration(10 * time.Minute), Finish: "tx"},
			DeployedBy: "hand", Kind: "deploy", Now: &s.live})
		return err
	})
	require.NoError(t, err)

	rep := s.verify(release.VerifyRequest{ReleaseID: s.release.ID + 1})

	require.Equal(t, release.VerdictFail, statuses(rep)[release.CheckLease])
	require.Contains(t, checkNamed(t, rep, release.CheckLease).Detail, "does not fit the 15m0s in-flight window")
}

func TestVerifyNeverWrites(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	data, releases := fingerprint(t, s.pool), history(t, s.pool)

	s.verify(release.VerifyRequest{})

	require.Equal(t, data, fingerprint(t, s.pool))
	require.Equal(t, releases, history(t, s.pool))
}

func TestVerifyRefusesBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		req  release.VerifyRequest
		want string
	}{
		{"an unknown release", release.VerifyRequest{ReleaseID: 99}, "--release 99: no such release"},
		{"a negative wait", release.VerifyRequest{Wait: release.WaitOptions{Timeout: -time.Second}}, "--wait"},
		{"a negative round count", release.VerifyRequest{Rounds: -1}, "--rounds"},
	}
	s := newScene(t, 1)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := release.Verify(s.ctx, s.pool, tc.req)
			require.Contains(t, asFlags(err), tc.want)
			require.Equal(t, exit.Usage, exit.Code(err))
		})
	}
	t.Run("no active release", func(t *testing.T) {
		_, err := release.Verify(t.Context(), tmpl.Pool(t), release.VerifyRequest{})
		require.ErrorContains(t, err, "no release is active")
		require.Equal(t, exit.Usage, exit.Code(err))
	})
}

// TestVerifyWaitsForTheRounds starts verify before any round exists; the test plants the rounds
// only once verify has looked and found none, then lets it look again.
func TestVerifyWaitsForTheRounds(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	tick := make(chan time.Time)
	looked := make(chan release.Progress)
	type result struct {
		rep *release.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := release.Verify(s.ctx, s.pool, release.VerifyRequest{Wait: release.WaitOptions{
			Timeout: time.Hour, Tick: tick, Progress: func(p release.Progress) { looked <- p }}})
		done <- result{rep, err}
	}()

	p := <-looked
	require.Equal(t, release.Progress{Wanted: 2}, release.Progress{Wanted: p.Wanted, Found: p.Found, Finished: p.Finished})
	s.round(time.Minute, true, job{server: 0}, job{server: 1}, job{server: 2})
	tick <- time.Now()
	p = <-looked
	require.Equal(t, 1, p.Finished)
	require.False(t, p.Ready())
	s.round(6*time.Minute, true, job{server: 3}, job{server: 4}, job{server: 5})
	tick <- time.Now()
	p = <-looked
	require.True(t, p.Ready())

	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, release.VerdictPass, r.rep.Verdict, "%+v", r.rep.Checks)
}

func TestVerifyThatStopsWaitingIsInconclusive(t *testing.T) {
	t.Parallel()
	s := newScene(t, 1)
	s.round(time.Minute, true, job{server: 0})

	// The ticker never ticks: only the deadline ends the wait.
	rep := s.verify(release.VerifyRequest{Wait: release.WaitOptions{Timeout: time.Millisecond, Tick: make(chan time.Time)}})

	require.Equal(t, release.VerdictInconclusive, rep.Verdict)
	require.Positive(t, rep.WaitedSeconds)
}

// Retiring a key (a rotation, or a leak found later, backdated to when it happened) ends what it
// may sign from then on: the runs it signed before its retirement keep verifying, the runs that
// finished after it do not.
func TestARetiredKeyVerifiesOnlyTheRunsThatFinishedBeforeItsRetirement(t *testing.T) {
	t.Parallel()
	t.Run("retired after every run", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, 6)
		s.clean()
		_, err := queries.RetireSigningKey(s.ctx, s.pool, s.signer.KeyID(), testfactory.Ptr(s.live.Add(time.Hour)))
		require.NoError(t, err)

		rep := s.verify(release.VerifyRequest{})

		require.Equal(t, release.VerdictPass, rep.Verdict, "%+v", rep.Checks)
		require.Equal(t, "6 envelope(s) verify against the 1 registered key(s)", checkNamed(t, rep, release.CheckEnvelopesValid).Detail)
	})
	t.Run("retired between the two rounds", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, 6)
		s.clean() // rounds start 1 and 6 minutes after the release went live
		_, err := queries.RetireSigningKey(s.ctx, s.pool, s.signer.KeyID(), testfactory.Ptr(s.live.Add(3*time.Minute)))
		require.NoError(t, err)

		rep := s.verify(release.VerifyRequest{})

		require.Equal(t, []string{release.CheckEnvelopesValid}, notPassing(rep))
		check := checkNamed(t, rep, release.CheckEnvelopesValid)
		require.Len(t, check.Items, 3)
		for _, item := range check.Items {
			require.Contains(t, item, "signed only by a key retired before its job finished at")
		}
		require.Equal(t, 0, rep.Rounds[0].EnvelopesInvalid)
		require.Equal(t, 3, rep.Rounds[1].EnvelopesInvalid)
	})
	t.Run("retired the very moment a job finished", func(t *testing.T) {
		t.Parallel()
		s := newScene(t, 6)
		s.clean()
		// The first round's jobs finish 1.1 s, 2.2 s and 3.3 s after it starts, a minute after
		// the release went live: retired from the third's finish on, the third is refused.
		_, err := queries.RetireSigningKey(s.ctx, s.pool, s.signer.KeyID(), testfactory.Ptr(s.live.Add(time.Minute+3300*time.Millisecond)))
		require.NoError(t, err)

		rep := s.verify(release.VerifyRequest{})

		require.Equal(t, 1, rep.Rounds[0].EnvelopesInvalid)
		require.Equal(t, 3, rep.Rounds[1].EnvelopesInvalid)
		require.Contains(t, checkNamed(t, rep, release.CheckEnvelopesValid).Items[0], "job 3 (srv-2)")
	})
}

// 00029's probectl.runs_once belongs to probe_finish_many: set for a database (or a role, or a
// session), it switches off every finish's one-run-per-job check while the functions are all as
// shipped. The functions check says so, and where it is set.
func TestVerifyFailsWhenAGuardsSettingIsSetForTheDatabase(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	var db string
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT current_database()").Scan(&db))
	_, err := s.pool.Exec(s.ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET probectl.runs_once = 'checked'")
	require.NoError(t, err) // test-only: plant the misconfiguration

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
	check := checkNamed(t, rep, release.CheckFunctions)
	n := len(rep.Functions.Shipped)
	require.Equal(t, fmt.Sprintf("%d of %d as shipped; 1 setting(s) switch guards off", n, n), check.Detail)
	require.Equal(t, []string{"probectl.runs_once=checked set for every role in database " + db +
		": no finish checks one run per job (probe_runs_once); ALTER DATABASE " + db + " RESET probectl.runs_once"}, check.Items)
	require.Equal(t, []string{}, rep.Functions.Changed)

	// Set for this session's role in this database instead: said once, for the role, not again
	// for the session that got it from there.
	_, err = s.pool.Exec(s.ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" RESET probectl.runs_once")
	require.NoError(t, err)
	var role string
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT current_user").Scan(&role))
	_, err = s.pool.Exec(s.ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" IN DATABASE "+pgx.Identifier{db}.Sanitize()+
		" SET probectl.runs_once = 'checked'")
	require.NoError(t, err)
	s.pool.Reset() // sessions that take the role's setting
	items := checkNamed(t, s.verify(release.VerifyRequest{}), release.CheckFunctions).Items
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "probectl.runs_once=checked set for role "+role+" in database "+db+": "), items[0])
	require.True(t, strings.HasSuffix(items[0], "; ALTER ROLE "+role+" IN DATABASE "+db+" RESET probectl.runs_once"), items[0])
}

// Set in verify's own session (PGOPTIONS, or a SET), the setting is said too: where it comes from
// there, it likely reaches the rounds' sessions as well.
func TestVerifyFailsWhenAGuardsSettingIsSetInItsSession(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	c, err := s.pool.Acquire(s.ctx)
	require.NoError(t, err)
	defer c.Release()
	_, err = c.Exec(s.ctx, "SET probectl.runs_once = 'checked'")
	require.NoError(t, err)

	rep, err := release.Verify(s.ctx, c.Conn(), release.VerifyRequest{})
	require.NoError(t, err)

	require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
	items := checkNamed(t, rep, release.CheckFunctions).Items
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "probectl.runs_once=checked set for this session in database "), items[0])
	require.True(t, strings.HasSuffix(items[0], "; take it out of PGOPTIONS or postgresql.conf (ALTER SYSTEM RESET probectl.runs_once), or RESET probectl.runs_once where the session sets it"), items[0])
}

// A function as shipped keeps no guard when its trigger is off: verify names each trigger the
// migrations leave that is disabled, dropped, replaced, or off in some of its table's partitions.
func TestVerifyFailsWhenAGuardsTriggerIsOff(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	exec := s.exec
	functionsItems := func(wantDetail string) []string {
		t.Helper()
		rep := s.verify(release.VerifyRequest{})
		require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
		check := checkNamed(t, rep, release.CheckFunctions)
		n := len(rep.Functions.Shipped)
		require.Equal(t, fmt.Sprintf("%d of %d as shipped; %s", n, n, wantDetail), check.Detail)
		require.Equal(t, []string{}, rep.Functions.Changed)
		return check.Items
	}
	const one = "1 trigger(s) missing or disabled"

	exec("ALTER TABLE probe_runs DISABLE TRIGGER probe_runs_once")
	require.Equal(t, []string{"trigger probe_runs_once on probe_runs is disabled (it keeps one run per job, " +
		"for every finish but the batched one): ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_once"},
		functionsItems(one))
	exec("ALTER TABLE probe_runs ENABLE TRIGGER probe_runs_once")

	// Only on the replica's side is as off as disabled in a probectl session; always is on.
	exec("ALTER TABLE probe_rounds ENABLE REPLICA TRIGGER alert_rounds_end")
	items := functionsItems(one)
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "trigger alert_rounds_end on probe_rounds is disabled"), items[0])
	exec("ALTER TABLE probe_rounds ENABLE ALWAYS TRIGGER alert_rounds_end")
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})))
	exec("ALTER TABLE probe_rounds ENABLE TRIGGER alert_rounds_end")

	// One partition's copy.
	var part string
	require.NoError(t, s.pool.QueryRow(s.ctx, `SELECT min(c.relname) FROM pg_inherits AS i
		JOIN pg_class AS c ON c.oid = i.inhrelid WHERE i.inhparent = 'probe_jobs'::regclass`).Scan(&part))
	exec("ALTER TABLE " + pgx.Identifier{part}.Sanitize() + " DISABLE TRIGGER probe_jobs_open")
	require.Equal(t, []string{"trigger probe_jobs_open on probe_jobs is disabled or missing in 1 partition(s), " + part +
		" (it keeps the open-job queue: layer 4, one open job per server): ALTER TABLE probe_jobs ENABLE TRIGGER " +
		"probe_jobs_open enables every partition's copy"}, functionsItems(one))
	exec("ALTER TABLE probe_jobs ENABLE TRIGGER probe_jobs_open") // as the item says
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})))

	// Dropped: the item's statement makes it again.
	exec("DROP TRIGGER alert_states_for_server ON servers")
	items = functionsItems(one)
	require.Len(t, items, 1)
	create, ok := strings.CutPrefix(items[0], "trigger alert_states_for_server on servers is missing "+
		"(it keeps a new server's alert state, without which its runs are not judged): make it again: ")
	require.True(t, ok, items[0])
	exec(create)
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})))

	// Another trigger under the name: another function, or other events.
	exec("DROP TRIGGER probe_runs_once ON probe_runs")
	exec("CREATE TRIGGER probe_runs_once AFTER DELETE ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_once()")
	items = functionsItems(one)
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "trigger probe_runs_once on probe_runs is not the one shipped "+
		"(CREATE TRIGGER probe_runs_once AFTER DELETE ON "), items[0])
	_, mend, ok := strings.Cut(items[0], "for every finish but the batched one): ")
	require.True(t, ok, items[0])
	require.True(t, strings.HasPrefix(mend, "BEGIN; DROP TRIGGER probe_runs_once ON probe_runs; CREATE TRIGGER"), mend)
	exec(mend)
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})))
}

// A role's own setting counts only where the role can store a run: a loader's or a replication
// tool's role that cannot write probectl's tables may keep whatever it sets for itself.
func TestVerifyLooksAtTheSettingsOfRolesThatCanStoreARun(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	var db string
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT current_database()").Scan(&db))
	name := db + "_loader" // quoted as quote_ident would not: a lower-case name
	role := pgx.Identifier{name}.Sanitize()
	exec := s.exec
	exec("CREATE ROLE " + role + " LOGIN")
	t.Cleanup(func() {
		_, _ = s.pool.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	exec("ALTER ROLE " + role + " IN DATABASE " + pgx.Identifier{db}.Sanitize() + " SET probectl.runs_once = 'checked'")
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})), "a role that cannot store a run")

	// Verify run as that role, which cannot store a run: its own setting does not count, nor does
	// its session's value, which the setting explains.
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.User = name
	exec("GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + role)
	c, err := pgx.ConnectConfig(s.ctx, cfg)
	require.NoError(t, err)
	defer c.Close(context.Background())
	rep, err := release.Verify(s.ctx, c, release.VerifyRequest{})
	require.NoError(t, err)
	require.Empty(t, checkNamed(t, rep, release.CheckFunctions).Items, "verify as the role that cannot store a run")

	// A grant of one column is enough to store a run.
	exec("GRANT INSERT (job_id) ON probe_runs TO " + role)
	items := checkNamed(t, s.verify(release.VerifyRequest{}), release.CheckFunctions).Items
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "probectl.runs_once=checked set for role "+name+" in database "+db+": "), items[0])
}

// session_replication_role = 'replica', left for the database by a replication or migration tool,
// fires no trigger at all: verify says where it is set, in whatever case it was written. Setting it
// needs a superuser.
func TestVerifyFailsWhenTriggersAreSwitchedOffForTheDatabase(t *testing.T) {
	t.Parallel()
	s := newScene(t, 6)
	s.clean()
	var db string
	var super bool
	require.NoError(t, s.pool.QueryRow(s.ctx, "SELECT current_database(), (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)").Scan(&db, &super))
	if !super {
		t.Skip("session_replication_role can only be set by a superuser; the tests' role is not one")
	}
	_, err := s.pool.Exec(s.ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET session_replication_role = 'Replica'")
	require.NoError(t, err) // test-only: plant the misconfiguration
	s.pool.Reset()          // sessions that take the database's setting

	rep := s.verify(release.VerifyRequest{})

	require.Equal(t, []string{release.CheckFunctions}, notPassing(rep))
	require.Equal(t, []string{"session_replication_role=Replica set for every role in database " + db +
		": no trigger fires, nor any foreign key's check (the open-job queue, one run per job, the rollups and the " +
		"alert states are not kept); ALTER DATABASE " + db + " RESET session_replication_role"},
		checkNamed(t, rep, release.CheckFunctions).Items)

	// Set for a loader's role instead: said where the role writes a table a guard's trigger is on
	// (here servers), not where it only reads.
	_, err = s.pool.Exec(s.ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" RESET session_replication_role")
	require.NoError(t, err)
	s.pool.Reset() // sessions without the database's setting
	name := db + "_loader"
	role := pgx.Identifier{name}.Sanitize()
	_, err = s.pool.Exec(s.ctx, "CREATE ROLE "+role+" LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO "+role+
		"; ALTER ROLE "+role+" IN DATABASE "+pgx.Identifier{db}.Sanitize()+" SET session_replication_role = replica")
	require.NoError(t, err) // test-only: a role of the test's own, and its setting
	t.Cleanup(func() {
		_, _ = s.pool.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role)
	})
	require.Empty(t, notPassing(s.verify(release.VerifyRequest{})), "a role that only reads")
	_, err = s.pool.Exec(s.ctx, "GRANT INSERT ON servers TO "+role)
	require.NoError(t, err)
	items := checkNamed(t, s.verify(release.VerifyRequest{}), release.CheckFunctions).Items
	require.Len(t, items, 1)
	require.True(t, strings.HasPrefix(items[0], "session_replication_role=replica set for role "+name+" in database "+db+": "), items[0])
	_, err = s.pool.Exec(s.ctx, "DROP OWNED BY "+role)
	require.NoError(t, err)

	// Set in the session instead, beside the other setting stored for the database: each is said,
	// the session's because no stored setting of its own name explains it.
	_, err = s.pool.Exec(s.ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET probectl.runs_once = 'checked'")
	require.NoError(t, err)
	s.pool.Reset()
	c, err := s.pool.Acquire(s.ctx)
	require.NoError(t, err)
	defer c.Release()
	_, err = c.Exec(s.ctx, "SET session_replication_role = replica")
	require.NoError(t, err)
	rep, err = release.Verify(s.ctx, c.Conn(), release.VerifyRequest{})
	require.NoError(t, err)
	items = checkNamed(t, rep, release.CheckFunctions).Items
	require.Len(t, items, 2, "%v", items)
	require.True(t, strings.HasPrefix(items[0], "probectl.runs_once=checked set for every role in database "), items[0])
	require.True(t, strings.HasPrefix(items[1], "session_replication_role=replica set for this session in database "), items[1])
	require.True(t, strings.HasSuffix(items[1], "; RESET session_replication_role where the session sets it"), items[1])
}
