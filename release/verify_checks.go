package release

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// The checks, by the names the JSON carries.
const (
	CheckRounds           = "rounds"
	CheckJobs             = "jobs"
	CheckJobsRunsServers  = "jobs_runs_servers"
	CheckOpenJobs         = "open_jobs"
	CheckEnvelopesPresent = "envelopes_present"
	CheckEnvelopesValid   = "envelopes_valid"
	CheckDuplicates       = "duplicates"
	CheckFunctions        = "functions"
	CheckLease            = "lease"
)

// CheckHealth ("health") is in verify_health.go.

// maxItems bounds the items a check names; the detail says how many there were.
const maxItems = 20

func pass(name, detail string) Check {
	return Check{Name: name, Status: VerdictPass, Detail: detail, Items: []string{}}
}

func fail(name, detail string, items []string) Check {
	if items == nil {
		items = []string{}
	}
	if len(items) > maxItems {
		items = append(items[:maxItems:maxItems], fmt.Sprintf("... and %d more", len(items)-maxItems))
	}
	return Check{Name: name, Status: VerdictFail, Detail: detail, Items: items}
}

func inconclusive(name, detail string) Check {
	return Check{Name: name, Status: VerdictInconclusive, Detail: detail, Items: []string{}}
}

// finished are the rounds whose counts are final: a running round's open jobs and missing runs
// are work in progress, not defects. A recovered round's are final too: its prober is gone and
// every job it claimed has its run.
func finished(rep *Report) []RoundReport {
	var out []RoundReport
	for _, r := range rep.Rounds {
		if r.FinishedAt != nil || r.State == queries.RoundRecovered {
			out = append(out, r)
		}
	}
	return out
}

func checkRoundsFound(rep *Report) Check {
	done := len(finished(rep))
	var dead []string
	for _, r := range rep.Rounds {
		if r.State == queries.RoundDead {
			line := fmt.Sprintf("round %d is dead (no heartbeat for %s), open jobs: %s", r.ID,
				render.Duration(queries.RoundDeadAfter), strings.Join(r.deadOpenJobs, ", "))
			if len(r.deadLostJobs) > 0 {
				line += fmt.Sprintf("; %d check(s) lost, abandoned without a run: %s", len(r.deadLostJobs),
					strings.Join(r.deadLostJobs, ", "))
			}
			dead = append(dead, line)
		}
	}
	recovered := ""
	for _, r := range rep.Rounds {
		if r.State == queries.RoundRecovered {
			recovered += fmt.Sprintf("; round %d died but every job it claimed was finished since (recovered)", r.ID)
		}
	}
	switch {
	case len(dead) > 0:
		return fail(CheckRounds, fmt.Sprintf("%d round(s) died before they finished: their prober is gone and its "+
			"jobs stay open until the in-flight window closes them (see probectl status)", len(dead)), dead)
	case len(rep.Rounds) < rep.RoundsWanted:
		return inconclusive(CheckRounds, fmt.Sprintf("%d of %d rounds have started since the release went live; "+
			"no data is not a pass: wait for more rounds (--wait)", len(rep.Rounds), rep.RoundsWanted))
	case done < rep.RoundsWanted:
		return inconclusive(CheckRounds, fmt.Sprintf("%d of %d rounds have finished; wait for the rest (--wait)%s",
			done, rep.RoundsWanted, recovered))
	}
	return pass(CheckRounds, fmt.Sprintf("%d of %d rounds started since the release went live, all finished%s",
		done, rep.RoundsWanted, recovered))
}

// deadJobsOf names a dead round's open jobs ("none" when there are none) and its jobs closed as
// abandoned without a run (the checks it lost): "job 12 (weather)".
func deadJobsOf(ctx context.Context, tx pgx.Tx, roundID int64) (open, lost []string, err error) {
	jobs, err := queries.ListRoundJobs(ctx, tx, roundID)
	if err != nil {
		return nil, nil, err
	}
	open = []string{}
	for _, j := range jobs {
		name := fmt.Sprintf("job %d (%s)", j.JobID, j.Slug)
		switch {
		case j.FinishedAt == nil:
			open = append(open, name)
		case j.Outcome != nil && *j.Outcome == "abandoned" && j.RunID == nil:
			lost = append(lost, name)
		}
	}
	if len(open) == 0 {
		open = append(open, "none")
	}
	return open, lost, nil
}

func checkJobsFound(rep *Report) Check {
	jobs := 0
	for _, r := range rep.Rounds {
		jobs += r.Jobs
	}
	if jobs == 0 {
		return inconclusive(CheckJobs, fmt.Sprintf("not a single job in %d round(s): nothing was checked, "+
			"so nothing is proven", len(rep.Rounds)))
	}
	return pass(CheckJobs, fmt.Sprintf("%d job(s) in %d round(s)", jobs, len(rep.Rounds)))
}

func checkJobsRunsServers(rep *Report) Check {
	var bad []string
	rounds := finished(rep)
	for _, r := range rounds {
		if r.Jobs != r.Runs || r.Jobs != r.Servers {
			bad = append(bad, fmt.Sprintf("round %d: %d jobs, %d runs, %d servers", r.ID, r.Jobs, r.Runs, r.Servers))
		}
	}
	if len(bad) > 0 {
		return fail(CheckJobsRunsServers, fmt.Sprintf("%d round(s) where jobs, runs and servers differ: "+
			"a job without a run, or a server claimed twice", len(bad)), bad)
	}
	return pass(CheckJobsRunsServers, fmt.Sprintf("jobs = runs = servers in %d finished round(s)", len(rounds)))
}

func checkOpenJobs(rep *Report) Check {
	var bad []string
	open := 0
	for _, r := range finished(rep) {
		if r.OpenJobs > 0 {
			open += r.OpenJobs
			bad = append(bad, fmt.Sprintf("round %d: %d open", r.ID, r.OpenJobs))
		}
	}
	if open > 0 {
		return fail(CheckOpenJobs, fmt.Sprintf("%d job(s) left open in finished rounds: a probe died between claim "+
			"and finish (see probectl status)", open), bad)
	}
	return pass(CheckOpenJobs, "no job left open in a finished round")
}

func checkEnvelopesPresent(rep *Report) Check {
	var bad []string
	missing := 0
	for _, r := range rep.Rounds {
		if r.RunsMissingEnvelope > 0 {
			missing += r.RunsMissingEnvelope
			bad = append(bad, fmt.Sprintf("round %d: %d run(s) without an envelope", r.ID, r.RunsMissingEnvelope))
		}
	}
	if missing > 0 {
		return fail(CheckEnvelopesPresent, fmt.Sprintf("%d run(s) missing their attestation envelope", missing), bad)
	}
	return pass(CheckEnvelopesPresent, "every run has its attestation envelope")
}

// checkEnvelopesValid verifies every envelope of the rounds against the registered keys, and that
// it is the statement of its own job and server.
func checkEnvelopesValid(ctx context.Context, tx pgx.Tx, rep *Report, roundIDs []int64) (Check, error) {
	registered, err := keys.Verification(ctx, tx)
	if err != nil {
		return Check{}, err
	}
	byRound := map[int64]*RoundReport{}
	for i := range rep.Rounds {
		byRound[rep.Rounds[i].ID] = &rep.Rounds[i]
	}
	var bad []string
	checked := 0
	err = queries.VerifyEnvelopes(ctx, tx, roundIDs, func(run queries.SignedRun) error {
		checked++
		stored := attest.StoredRun{Envelope: run.Envelope, FinishedAt: run.FinishedAt, Slug: run.Slug, URL: run.URL, JobID: run.JobID}
		if err := attest.VerifyRun(stored, registered); err != nil {
			byRound[run.RoundID].EnvelopesInvalid++
			bad = append(bad, fmt.Sprintf("job %d (%s): %v", run.JobID, run.Slug, err))
		}
		return nil
	})
	if err != nil {
		return Check{}, err
	}
	if len(bad) > 0 {
		return fail(CheckEnvelopesValid, fmt.Sprintf("%d of %d envelope(s) fail verification against the %d registered key(s)",
			len(bad), checked, len(registered)), bad), nil
	}
	return pass(CheckEnvelopesValid, fmt.Sprintf("%d envelope(s) verify against the %d registered key(s)", checked, len(registered))), nil
}

// checkDuplicates is the check that caught the incident: per server, no two jobs within the
// window from the release onwards, including the last job before it. It reuses the audit, and
// puts each pair in the row of the round its second job belongs to.
func checkDuplicates(ctx context.Context, tx pgx.Tx, rep *Report, since time.Time, until *time.Time, window time.Duration) (Check, error) {
	p := audit.DuplicatesParams{Since: since, Window: window}
	if until != nil {
		p.Until = *until
	}
	dups, err := audit.DuplicatesTx(ctx, tx, p)
	if err != nil {
		return Check{}, err
	}
	second := make([]int64, 0, len(dups.Pairs))
	for _, pair := range dups.Pairs {
		second = append(second, pair.SecondJobID)
	}
	rounds, err := queries.JobRounds(ctx, tx, second)
	if err != nil {
		return Check{}, err
	}
	byRound := map[int64]*RoundReport{}
	for i := range rep.Rounds {
		byRound[rep.Rounds[i].ID] = &rep.Rounds[i]
	}
	var servers []string
	for _, pair := range dups.Pairs {
		if r, ok := byRound[rounds[pair.SecondJobID]]; ok {
			r.SecondClaims = append(r.SecondClaims, secondClaim(pair))
		}
		if !pair.Explained() && !slices.Contains(servers, pair.Slug) {
			servers = append(servers, pair.Slug)
		}
	}
	sort.Strings(servers)
	explained := len(dups.Pairs) - dups.Unexplained()
	note := ""
	if explained > 0 {
		note = fmt.Sprintf(" (%d explicit re-check(s) not counted)", explained)
	}
	if n := dups.Unexplained(); n > 0 {
		return fail(CheckDuplicates, fmt.Sprintf("%d duplicate claim(s) on %d server(s): two jobs less than %s apart%s",
			n, len(servers), render.Duration(window), note), servers), nil
	}
	return pass(CheckDuplicates, fmt.Sprintf("no server has two jobs less than %s apart among %d job(s) since the release%s",
		render.Duration(window), dups.Population.Jobs, note)), nil
}

func secondClaim(p audit.Pair) SecondClaim {
	c := SecondClaim{ServerID: p.ServerID, Slug: p.Slug, FirstJobID: p.FirstJobID, SecondJobID: p.SecondJobID,
		RequestGapSeconds: p.RequestGap.Seconds(), Explained: p.Explained()}
	if p.GapAfterFinish != nil {
		s := p.GapAfterFinish.Seconds()
		c.GapAfterFinishSeconds = &s
	}
	return c
}

// checkFunctions is the drift check: the claim and finish functions in the database must be the
// ones this binary ships, or the guards the tests proved are not the ones running. The check's
// line says counts (a table row fits a terminal); its items and the figures name the functions.
func checkFunctions(ctx context.Context, tx pgx.Tx) (Check, Functions, error) {
	shipped, err := queries.ShippedFunctionBodies()
	if err != nil {
		return Check{}, Functions{}, fmt.Errorf("read the functions this probectl ships: %w", err)
	}
	names := make([]string, 0, len(shipped))
	for name := range shipped {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return Check{}, Functions{}, errors.New("this probectl ships no database functions: its migrations are incomplete")
	}
	live, err := queries.LiveFunctionBodies(ctx, tx, names)
	if err != nil {
		return Check{}, Functions{}, err
	}
	figures := Functions{Shipped: names, Missing: []string{}, Changed: []string{}}
	var bad []string
	for _, name := range names {
		body, ok := live[name]
		switch {
		case !ok:
			figures.Missing = append(figures.Missing, name)
			bad = append(bad, name+": missing from the database")
		case queries.Forms(body) != queries.Forms(shipped[name]):
			figures.Changed = append(figures.Changed, name)
			bad = append(bad, fmt.Sprintf("%s: the database has %d form(s) (overloads), this probectl ships %d: "+
				"one it does not know (a later release's migration, after a rollback?) or a stale one",
				name, queries.Forms(body), queries.Forms(shipped[name])))
		case body != shipped[name]:
			figures.Changed = append(figures.Changed, name)
			bad = append(bad, name+": differs from the one this probectl ships")
		}
	}
	asShipped := fmt.Sprintf("%d of %d as shipped", len(names)-len(bad), len(names))
	// A function as shipped still runs without its guard if its trigger is gone or off, or if a
	// setting switches a guard off around it.
	triggers, err := queries.LiveTriggers(ctx, tx)
	if err != nil {
		return Check{}, Functions{}, err
	}
	schema, err := queries.TablesSchema(ctx, tx)
	if err != nil {
		return Check{}, Functions{}, err
	}
	off := triggersOff(triggers, schema)
	bad = append(bad, off...)
	set, err := queries.GuardSettingsSet(ctx, tx)
	if err != nil {
		return Check{}, Functions{}, err
	}
	for _, g := range set {
		bad = append(bad, settingOff(g))
	}
	more := ""
	if len(off) > 0 {
		more += fmt.Sprintf("; %d trigger(s) missing or disabled", len(off))
	}
	if len(set) > 0 {
		more += fmt.Sprintf("; %d setting(s) switch guards off", len(set))
	}
	switch {
	case len(figures.Missing)+len(figures.Changed) > 0:
		return fail(CheckFunctions, fmt.Sprintf("%s (%d missing, %d changed): run `probectl migrate`, or find who changed them%s",
			asShipped, len(figures.Missing), len(figures.Changed), more), bad), figures, nil
	case more != "":
		return fail(CheckFunctions, asShipped+more, bad), figures, nil
	}
	return pass(CheckFunctions, asShipped), figures, nil
}

// triggersOff names each trigger the migrations leave that the database lacks, runs as another
// (another function, time or events), has disabled, or has disabled or lacks in some of its
// table's partitions, with what it keeps and the statements that mend it. They run as printed:
// for a schema other than public, in a transaction that sets the search_path for itself.
func triggersOff(live []queries.LiveTrigger, schema string) []string {
	byName := make(map[string]queries.LiveTrigger, len(live))
	for _, l := range live {
		byName[l.Table+"."+l.Name] = l
	}
	mend := func(stmts ...string) string {
		if schema != "public" {
			stmts = append([]string{"SET LOCAL search_path = " + schema}, stmts...)
		}
		if len(stmts) == 1 {
			return stmts[0]
		}
		return "BEGIN; " + strings.Join(stmts, "; ") + "; COMMIT"
	}
	var off []string
	for _, g := range queries.GuardTriggers {
		l, ok := byName[g.Table+"."+g.Name]
		what := fmt.Sprintf("trigger %s on %s", g.Name, g.Table)
		enable := fmt.Sprintf("ALTER TABLE %s ENABLE TRIGGER %s", g.Table, g.Name)
		switch {
		case !ok:
			off = append(off, fmt.Sprintf("%s is missing (it keeps %s): make it again: %s", what, g.Holds, mend(g.Create)))
		case l.Function != g.Function || l.Type != g.Type:
			off = append(off, fmt.Sprintf("%s is not the one shipped (%s; it keeps %s): %s", what, l.Create, g.Holds,
				mend(fmt.Sprintf("DROP TRIGGER %s ON %s", g.Name, g.Table), g.Create)))
		case !l.Enabled:
			off = append(off, fmt.Sprintf("%s is disabled (it keeps %s): %s", what, g.Holds, mend(enable)))
		case len(l.OffIn) > 0:
			off = append(off, fmt.Sprintf("%s is disabled or missing in %d partition(s), %s (it keeps %s): "+
				"%s enables every partition's copy", what, len(l.OffIn), render.FirstOf(l.OffIn, 3, ", "), g.Holds, mend(enable)))
		}
	}
	return off
}

// settingOff says what a setting GuardSettingsSet found switches off, and how to take it back.
func settingOff(g queries.GuardSetting) string {
	name, _, _ := strings.Cut(g.Setting, "=")
	what := "no finish checks one run per job (probe_runs_once)"
	if name == "session_replication_role" {
		what = "no trigger fires, nor any foreign key's check (the open-job queue, one run per job, " +
			"the rollups and the alert states are not kept)"
	}
	return fmt.Sprintf("%s set for %s in %s: %s; %s", g.Setting, g.Role, g.Database, what, resetOf(g, name))
}

// resetOf says how to take a setting back from where GuardSettingsSet found it.
func resetOf(g queries.GuardSetting, name string) string {
	role, isRole := strings.CutPrefix(g.Role, "role ")
	db, isDB := strings.CutPrefix(g.Database, "database ")
	switch {
	case g.Role == "this session":
		switch g.Source {
		case "client":
			return "take it out of PGOPTIONS (the client's startup options)"
		case "configuration file":
			return "take it out of postgresql.conf (or ALTER SYSTEM RESET " + name + ") and reload"
		case "session":
			return "RESET " + name + " where the session sets it"
		case "": // a setting of an extension's prefix (probectl.*), which pg_settings does not list
			return "take it out of PGOPTIONS or postgresql.conf (ALTER SYSTEM RESET " + name + "), or RESET " + name +
				" where the session sets it"
		}
		return "find where the session gets it (pg_settings.source: " + g.Source + ")"
	case isRole && isDB:
		return fmt.Sprintf("ALTER ROLE %s IN DATABASE %s RESET %s", role, db, name)
	case isRole:
		return fmt.Sprintf("ALTER ROLE %s RESET %s", role, name)
	case isDB:
		return fmt.Sprintf("ALTER DATABASE %s RESET %s", db, name)
	}
	return "ALTER ROLE ALL RESET " + name
}

// checkLease: the release's settings must let a job's worst case fit inside the in-flight window.
func checkLease(r Release) Check {
	if err := roundOf(r.Carried).Validate(); err != nil {
		return fail(CheckLease, fmt.Sprintf("release #%d's settings fail the lease check: %v", r.ID, err), nil)
	}
	return pass(CheckLease, fmt.Sprintf("release #%d's settings fit a job's worst case inside the in-flight window", r.ID))
}
