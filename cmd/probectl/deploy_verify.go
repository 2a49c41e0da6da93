package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/release"
)

type deployVerifyOptions struct {
	f         *factory
	ReleaseID int64
	Rounds    int
	Wait      time.Duration
	Window    time.Duration
	MaxOkDrop float64
	Quiet     bool
	Alert     bool // alerts: a failed verdict is a verify.failed event (cmd/probectl/alerts_verify.go)
	// tick, set by tests, drives --wait instead of a ticker.
	tick <-chan time.Time
	// progress, set by tests, is told after each look while waiting.
	progress func(release.Progress)
}

func newDeployVerifyCmd(f *factory) *cobra.Command {
	opts := &deployVerifyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "verify [--release ID] [--rounds 2] [--wait DURATION] [--window 10m]",
		Short: "Read back the first rounds after a release: pass, fail or inconclusive",
		Long: `Read back the first --rounds rounds that started after the release went live (the active release
unless --release names another) and check them, as the release manager does after every deploy:

  rounds             as many rounds as asked for have started and finished
  jobs               those rounds have at least one job
  jobs_runs_servers  per round: jobs = runs = distinct servers
  open_jobs          no job left open in a finished round
  envelopes_present  no run is missing its attestation envelope
  envelopes_valid    every envelope verifies against a registered key not yet retired when
                     its job finished, and is about its own job and server
  duplicates         per server: no two jobs within --window (10 minutes), from the release
                     onwards, including the last job before it (explicit re-checks excepted)
  functions          the claim and finish functions in the database are the ones this
                     probectl ships
  lease              the release's settings fit a job's worst case inside the in-flight window
  health             the ok share of the rounds' jobs against the release active before, over
                     the servers both checked (each one's last check under that release):
                     fails when it dropped more than --max-ok-drop points (10); with no such
                     baseline (a first release, or no server in common) it reports the share,
                     says "no baseline", and passes

A round whose prober died is dead and fails the rounds check, unless every job it claimed was
finished since ('runs recover' stored what its spool held): it is then shown as recovered and
read as a finished round.

No data is not a pass: too few rounds, or not a single job, gives the verdict inconclusive.
--wait waits up to DURATION for the rounds to exist and finish (progress on stderr when it is a
terminal). Every read is in one READ ONLY transaction: verify never writes.

Exit status: 0 pass; 1 fail or inconclusive (the output says which); 3 could not read.`,
		Example: `  probectl deploy verify --wait 15m
  probectl deploy verify --release 7 --rounds 3
  probectl deploy verify --window 14m      # a fleet on a 15-minute plan
  probectl deploy verify -o json | jq -r '.checks[] | select(.status != "pass") | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeployVerify(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&opts.ReleaseID, "release", 0, "release to verify (default: the active one)")
	fl.IntVar(&opts.Rounds, "rounds", release.DefaultRounds, "rounds after the release to read back")
	durationVar(fl, &opts.Wait, "wait", 0, "wait up to this long for the rounds to exist and finish (at most 24h)")
	durationVar(fl, &opts.Window, "window", 10*time.Minute, "two jobs of one server requested less than this apart are a duplicate claim")
	fl.Float64Var(&opts.MaxOkDrop, "max-ok-drop", release.DefaultMaxOkDrop, "fail the health check when the ok share dropped more than this many points (0 to 100)")
	fl.BoolVarP(&opts.Quiet, "quiet", "q", false, "say nothing on stderr while waiting")
	fl.BoolVar(&opts.Alert, "alert", false, "on a fail verdict, send a verify.failed event to the receivers that take it (writes: needs the primary)")
	return cmd
}

func runDeployVerify(ctx context.Context, opts *deployVerifyOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	// Checked here: the request reads a zero Rounds as the default.
	if opts.Rounds < 1 {
		return exit.UsageError(fmt.Errorf("--rounds %d: must be at least 1", opts.Rounds))
	}
	if err := mustBePositive("window", opts.Window); err != nil {
		return err
	}
	req := release.VerifyRequest{ReleaseID: opts.ReleaseID, Rounds: opts.Rounds, Window: opts.Window,
		MaxOkDrop: &opts.MaxOkDrop, Wait: release.WaitOptions{Timeout: opts.Wait, Tick: opts.tick, Progress: opts.progress}}
	if err := release.ValidateVerify(req); err != nil {
		return err
	}
	if req.Wait.Progress == nil && !opts.Quiet {
		req.Wait.Progress = waitReporter(f.IO)
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	rep, err := release.Verify(ctx, pool, req)
	if err != nil {
		return prunedWindowError(err)
	}
	view := render.View{JSON: rep, Text: func() error { return writeVerifyReport(f, rep) }}
	if err := render.Output(f.IO.Out, format, view); err != nil {
		return err
	}
	if opts.Alert && rep.Verdict == release.VerdictFail {
		// The report may have been read on a standby (--read-database-url); the event is a write,
		// so it goes to the primary.
		primary, err := f.Pool(ctx)
		if err != nil {
			return err
		}
		if err := alertVerifyFailed(ctx, f, primary, rep); err != nil {
			return err
		}
	}
	if rep.Verdict != release.VerdictPass {
		return &silentError{code: exit.Found}
	}
	return nil
}

func writeVerifyReport(f *factory, rep *release.Report) error {
	st := render.StylesFor(f.IO)
	r := rep.Release
	state := "active"
	if !r.Active {
		state = "not active"
	}
	if _, err := fmt.Fprintf(f.IO.Out, "release #%d (%s, %s) live since %s; the first %d round(s) after it:\n\n",
		r.ID, r.Version, state, f.IO.Time(rep.Since), rep.RoundsWanted); err != nil {
		return err
	}
	if len(rep.Rounds) == 0 {
		if _, err := fmt.Fprintln(f.IO.Out, "no round has started since"); err != nil {
			return err
		}
	} else {
		tbl := render.NewTable(f.IO.Out, "ROUND", f.IO.TimeHeader("STARTED"), "JOBS", "RUNS", "SERVERS", "OPEN", "NO ENVELOPE",
			"BAD ENVELOPE", "SECOND CLAIM, AFTER THE FIRST JOB FINISHED")
		for _, rd := range rep.Rounds {
			started := f.IO.Clock(rd.StartedAt)
			if rd.FinishedAt == nil {
				started += " (" + rd.State + ")"
			}
			tbl.Row(rd.ID, started, rd.Jobs, rd.Runs, rd.Servers, rd.OpenJobs, rd.RunsMissingEnvelope,
				rd.EnvelopesInvalid, gapsText(rd.SecondClaims))
		}
		if err := tbl.Render(); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintln(f.IO.Out); err != nil {
		return err
	}
	tbl := render.NewTable(f.IO.Out, "CHECK", "RESULT", "DETAIL")
	for _, c := range rep.Checks {
		tbl.Row(c.Name, statusStyle(st, c.Status), c.Detail)
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	for _, c := range rep.Checks {
		if len(c.Items) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(f.IO.Out, "\n%s:\n  %s\n", c.Name, strings.Join(c.Items, "\n  ")); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(f.IO.Out, "\nverdict: %s\n", statusStyle(st, rep.Verdict))
	return err
}

func statusStyle(st render.Styles, status string) render.Cell {
	switch status {
	case release.VerdictPass:
		return render.Styled(st.Pass, status)
	case release.VerdictFail:
		return render.Styled(st.Fail, status)
	}
	return render.Styled(st.Warn, status)
}

// gapsText is the write-up's last column: "0.168 s, 0.236 s", "-" for none.
func gapsText(claims []release.SecondClaim) string {
	if len(claims) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(claims))
	for _, c := range claims {
		var s string
		if c.GapAfterFinishSeconds == nil {
			s = "first still open"
		} else {
			s = render.Duration(time.Duration(*c.GapAfterFinishSeconds * float64(time.Second)))
		}
		if c.Explained {
			s += " (re-check)"
		}
		parts = append(parts, c.Slug+" "+s)
	}
	return strings.Join(parts, ", ")
}
