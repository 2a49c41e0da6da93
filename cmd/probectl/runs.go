package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/queries"
)

func newRunsCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs <command>",
		Short: "Read the runs the prober recorded",
		Long: `Every check a round makes is stored as a run: what each request saw, the outcome and why, and
a DSSE envelope signed with one of the registered keys. 'runs list' finds runs, 'runs show'
prints one whole and says whether its envelope verifies, and 'runs verify' lets anyone check an
exported envelope with the public key alone, without our database. 'runs recover' stores the
results a round checked but could not store (the database was unreachable), which wait in the
local spool.`,
		Example: `  probectl runs list --server weather --limit 20
  probectl runs list --round 42 --outcome failed,error
  probectl runs show 1234
  probectl runs show 1234 --envelope > run-1234.json
  probectl keys export ed25519:3f9a0c1d2b4e5f60 > probectl.pub
  probectl runs verify run-1234.json --public-key probectl.pub
  probectl runs recover`,
	}
	cmd.AddCommand(
		newRunsListCmd(f),
		newRunsShowCmd(f),
		newRunsVerifyCmd(f),
		newRunsExportCmd(f),
		newRunsPruneCmd(f),
		newRunsRetentionCmd(f),
		newRunsRecoverCmd(f),
	)
	return cmd
}

// runJSON is the documented JSON shape of a run in 'runs list' (and 'servers show' last_runs).
type runJSON struct {
	ID              int64     `json:"id"`
	JobID           int64     `json:"job_id"`
	RoundID         *int64    `json:"round_id"`
	Server          string    `json:"server"`
	Kind            string    `json:"kind"`
	Outcome         string    `json:"outcome"`
	Summary         string    `json:"summary"`
	Error           *string   `json:"error"`
	Requests        int       `json:"requests"`
	StartedAt       time.Time `json:"started_at"`
	FinishedAt      time.Time `json:"finished_at"`
	DurationSeconds float64   `json:"duration_seconds"`
	KeyID           *string   `json:"key_id"`
	ProbectlFault   bool      `json:"probectl_fault"`
	// RoundDegraded: the run's round was judged degraded; its failure counted toward no server's
	// down threshold.
	RoundDegraded bool `json:"round_degraded"`
}

func toRunJSON(r queries.Run) runJSON {
	return runJSON{ID: r.ID, JobID: r.JobID, RoundID: r.RoundID, Server: r.Server, Kind: r.Kind, Outcome: r.Outcome,
		Summary: r.Summary, Error: r.Error, Requests: r.Requests, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, DurationSeconds: r.Duration().Seconds(), KeyID: r.KeyID, ProbectlFault: r.ProbectlFault,
		RoundDegraded: r.RoundDegraded}
}

func toRunsJSON(runs []queries.Run) []runJSON {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, toRunJSON(r))
	}
	return out
}

// runWhy is the one-line reason a table shows for a run: its error, else its summary.
func runWhy(r queries.Run) string {
	if r.Error != nil && *r.Error != "" {
		return *r.Error
	}
	return r.Summary
}

// spoolDir is --spool-dir, else $XDG_STATE_HOME/probectl, else ~/.local/state/probectl.
func spoolDir(f *factory, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return probe.DefaultSpoolDir(f.Getenv)
}

// spoolFlagError says a spool directory that cannot be used as the flag's fault (exit 2) when
// --spool-dir named it; a default one (XDG_STATE_HOME, the home directory) stays exit 3.
func spoolFlagError(err error, flag string) error {
	var se *probe.SpoolError
	if flag != "" && errors.As(err, &se) {
		return exit.UsageError(fmt.Errorf("--spool-dir: %w", se))
	}
	return err
}
