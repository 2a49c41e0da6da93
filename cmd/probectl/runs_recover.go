package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
)

type runsRecoverOptions struct {
	f        *factory
	SpoolDir string
}

func newRunsRecoverCmd(f *factory) *cobra.Command {
	opts := &runsRecoverOptions{f: f}
	cmd := &cobra.Command{
		Use:   "recover",
		Short: "Store the results that waited in the local spool, each exactly once",
		Long: `Store the results a round checked but could not store: when every attempt of a finish failed
inside its 30-second budget (the database was down), the round wrote the result, as its signed
run would hold it, to a spool file of its own (0600, fsync'd) under --spool-dir, by default
$XDG_STATE_HOME/probectl or ~/.local/state/probectl. 'run round' does the same before it claims.

A result whose run is already stored changes nothing: a run's job is unique, so a result is
stored exactly once however often it is replayed. A result is matched to its job by job id,
server, round and the time of the claim: after a failover of the database the job may be gone,
or its id given to another claim. Such a result is never counted as stored: it is restored under
a finished job of its own, marked restored (probe_restored_jobs), or, for a record too old to
carry its claim's time, kept in the spool and reported. A file still written by a live round is left
for later. A file is removed once all its results are stored; what cannot be stored stays, and
'probectl status' shows it.

-o json prints dir, files (replayed and removed), stored, already_stored, restored (of the
stored, those whose claim had vanished), busy (files a live
round still writes), left (results still waiting), problems and set_aside. Exit 0 when nothing is
left and nothing went wrong (a file set aside, or busy, is not a failure); 3 when results could not
be stored (check the database), when a file was not replayed or could not be set aside (problems:
a person must look), or when the directory cannot be used.`,
		Example: `  probectl runs recover
  probectl runs recover --spool-dir /var/lib/probectl/spool -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsRecover(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.SpoolDir, "spool-dir", "", "where results wait to be stored (default $XDG_STATE_HOME/probectl)")
	return cmd
}

// recoveryJSON is the shape of runs recover -o json (docs/runs.md).
type recoveryJSON struct {
	Dir           string   `json:"dir"`
	Files         int      `json:"files"`
	Stored        int      `json:"stored"`
	AlreadyStored int      `json:"already_stored"`
	Restored      int      `json:"restored"`
	Busy          int      `json:"busy"`
	Left          int      `json:"left"`
	Problems      []string `json:"problems"`
	SetAside      []string `json:"set_aside"`
}

// recoverIncompleteError says the work is not all done: results stay in the spool (left), or a
// file in it was not replayed or could not be set aside (problems), and may hold a result.
type recoverIncompleteError struct{ left, problems int }

func (e *recoverIncompleteError) Error() string {
	if e.left > 0 {
		return fmt.Sprintf("%d result(s) could not be stored and stay in the spool (%d problem(s) in all); check the database and "+
			"run 'probectl runs recover' again", e.left, e.problems)
	}
	return fmt.Sprintf("%d problem(s) in the spool (said with the results): a file not replayed or not set aside, or the failover "+
		"journals not read; deal with them and run 'probectl runs recover' again", e.problems)
}

func (e *recoverIncompleteError) ExitCode() int { return exit.Unavailable }

func runRunsRecover(ctx context.Context, opts *runsRecoverOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	dir, err := spoolDir(f, opts.SpoolDir)
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	rec, err := probe.RecoverAll(ctx, pool, dir, slog.New(slog.NewTextHandler(f.IO.ErrOut, nil)))
	if err != nil {
		return spoolFlagError(err, opts.SpoolDir)
	}
	problems := rec.Problems
	if problems == nil {
		problems = []string{}
	}
	err = render.Output(f.IO.Out, format, render.View{
		JSON: recoveryJSON{Dir: rec.Dir, Files: rec.Files, Stored: rec.Stored, AlreadyStored: rec.AlreadyStored,
			Restored: rec.Restored, Busy: rec.Busy, Left: rec.Left, Problems: problems,
			SetAside: append([]string{}, rec.SetAside...)},
		Text: func() error {
			_, err := fmt.Fprintf(f.IO.Out, "%s: %d stored (%d restored), %d already stored, %d file(s) replayed, %d busy, %d left\n",
				rec.Dir, rec.Stored, rec.Restored, rec.AlreadyStored, rec.Files, rec.Busy, rec.Left)
			for _, p := range rec.Problems {
				fmt.Fprintf(f.IO.ErrOut, "probectl: %s\n", p)
			}
			for _, a := range rec.SetAside {
				fmt.Fprintf(f.IO.ErrOut, "probectl: %s\n", a)
			}
			return err
		},
	})
	if err != nil {
		return err
	}
	if rec.Left > 0 || len(rec.Problems) > 0 {
		return &recoverIncompleteError{left: rec.Left, problems: len(rec.Problems)}
	}
	return nil
}
