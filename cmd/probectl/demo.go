package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/demo"
	"github.com/probectl/probectl/internal/render"
)

type demoOptions struct {
	f                 *factory
	ReproduceIncident bool
	Keep              bool
	PGBinDir          string

	// servers, set by tests, makes the fleet smaller than demo.DefaultServers.
	servers int
}

func newDemoCmd(f *factory) *cobra.Command {
	opts := &demoOptions{f: f}
	cmd := &cobra.Command{
		Use:   "demo [--reproduce-incident] [--keep]",
		Short: "See the whole story on this machine: a throwaway database, a simulated fleet, rounds, verify, audit, rollback",
		Long: `Run probectl end to end on this machine, with nothing installed but PostgreSQL's server binaries
(initdb and postgres; Debian and Ubuntu: apt-get install postgresql). The demo starts a throwaway
PostgreSQL, applies the schema, starts a simulated fleet of 300 servers on 127.0.0.1 (plain http
servers and real MCP servers built with the MCP Go SDK, a few of them slow, failing, never
answering or oversized), generates a throwaway signing key and records a release with fan-out 19,
claim limit 5 and concurrency 3 (ways back: previous, fanout-off). Then it runs parallel rounds
until nothing is due, reads them back with deploy verify and audit duplicates, and shows what
'rollback --fanout-off' would change (a dry run). Every step goes through the same code as the
real command it names, and shows the same output. It takes a few seconds, and everything it
started is stopped and removed at the end.

--reproduce-incident replays the incident of 2026-10-07 instead: a finish's two writes in the old
order (the job finished first, the next check time advanced second) and the spacing guard off,
first as the sequential prober ran them (clean), then with fan-out 19/5/3 (duplicate claims);
deploy verify catches them and names the servers and the gaps; 'rollback --fanout-off' is applied
to the demo's own database; the next rounds are clean; and audit duplicates, split at the deploy
and at the rollback, shows before, during and after. The old order exists for this replay and the
tests only: no flag of 'run round' and no release setting reaches it.

Narration goes to stderr, the commands' own output to stdout; -o json prints one document with the
rounds, the verify report(s), the audit and the rollback. --keep leaves PostgreSQL running and
says how to connect to it and how to stop it.

Exit status: 0 when the demo showed what it should; 1 when it did not (a duplicate in the default
demo, none in the replay); 3 when it could not run (no PostgreSQL binaries, no free port).`,
		Example: `  probectl demo
  probectl demo --reproduce-incident
  probectl demo --keep            # then: PROBECTL_DATABASE_URL=... probectl status
  probectl demo -o json | jq '.verify[0].verdict'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.ReproduceIncident, "reproduce-incident", false, "replay the incident: the old write order with fan-out on, caught, rolled back")
	fl.BoolVar(&opts.Keep, "keep", false, "leave PostgreSQL running at the end and print how to connect and stop it")
	fl.StringVar(&opts.PGBinDir, "pg-bin-dir", "", "directory of PostgreSQL's initdb and postgres (default: found through pg_config, PATH, /usr/lib/postgresql)")
	return cmd
}

func runDemo(ctx context.Context, opts *demoOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	rep := &demoReporter{f: f, format: format}
	res, err := demo.Run(ctx, demo.Options{
		ReproduceIncident: opts.ReproduceIncident, Keep: opts.Keep, Version: f.Build.Version,
		Actor: actorFrom(f, ""), Servers: opts.servers, Report: rep, Log: f.IO.ErrOut, BinDir: opts.PGBinDir,
	})
	if res == nil {
		return err
	}
	if res.Kept != nil {
		writeKept(f.IO, res.Kept)
	}
	// The tables were written step by step; the JSON is one document, written now.
	if jerr := render.Output(f.IO.Out, format, render.View{JSON: rep.document(res)}); jerr != nil && err == nil {
		err = jerr
	}
	if err == nil {
		err = rep.err
	}
	fmt.Fprintf(f.IO.ErrOut, "\n%s.\ndone in %s; %s\n", res.Conclusion(), render.Duration(res.Duration), cleanedUp(res))
	return err
}

func cleanedUp(res *demo.Result) string {
	if res.Kept != nil {
		return "the fleet is stopped, PostgreSQL keeps running (see above)"
	}
	return "the fleet and PostgreSQL are stopped and their files removed"
}

// writeKept says how to reach the database --keep left running, and how to stop it.
func writeKept(io *render.Streams, k *demo.Kept) {
	fmt.Fprintf(io.ErrOut, `
PostgreSQL keeps running (--keep). Connect with:
  export PROBECTL_DATABASE_URL='%s'
  probectl status
  probectl audit duplicates --since 1h
  psql "$PROBECTL_DATABASE_URL"
Stop it and remove its files (%s) with:
  kill -INT %d; while kill -0 %d 2>/dev/null; do sleep 0.2; done; rm -rf %s
`, k.URL, k.Dir, k.PID, k.PID, k.Dir)
}
