package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

type runsShowOptions struct {
	f        *factory
	ID       int64
	Envelope bool
}

func newRunsShowCmd(f *factory) *cobra.Command {
	opts := &runsShowOptions{f: f}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one run whole, and whether its envelope verifies",
		Long: `Show everything one run observed: each request (method, URL, status, latency, bytes, TLS), the
MCP details, the outcome and the error, and whether its DSSE envelope verifies against the
registered keys (signed by a key not yet retired when its job finished, about its own job and
server), as deploy verify checks it.

-o json adds the result as stored and envelope_verified (null when the run has no envelope).
--envelope prints the envelope alone, as JSON, for a third party to check with
'probectl runs verify' and the key from 'probectl keys export'.`,
		Example: `  probectl runs show 1234
  probectl runs show 1234 -o json | jq .result.requests
  probectl runs show 1234 --envelope > run-1234.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return exit.UsageError(fmt.Errorf("run id: want a positive number, got %q", args[0]))
			}
			opts.ID = id
			return runRunsShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Envelope, "envelope", false, "print the run's DSSE envelope alone, as JSON")
	return cmd
}

// runShowJSON is the documented JSON shape of 'runs show'.
type runShowJSON struct {
	runJSON
	URL              string          `json:"url"`
	Result           json.RawMessage `json:"result"`
	EnvelopeVerified *bool           `json:"envelope_verified"`
	EnvelopeError    string          `json:"envelope_error,omitempty"`
}

func runRunsShow(ctx context.Context, opts *runsShowOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	v, err := history.ShowRun(ctx, pool, opts.ID)
	var pruned *history.PrunedError
	if errors.As(err, &pruned) {
		return exit.UsageError(pruned)
	}
	if errors.Is(err, queries.ErrNoRun) {
		return exit.UsageError(fmt.Errorf("no run %d; 'probectl runs list' shows the runs", opts.ID))
	}
	if err != nil {
		return err
	}
	if opts.Envelope {
		if len(v.Envelope) == 0 {
			return exit.FoundError(fmt.Errorf("run %d has no envelope: it was stored unsigned", opts.ID))
		}
		// The envelope is JSON whatever -o says: it is the file 'runs verify' reads.
		return render.Output(f.IO.Out, render.FormatJSON, render.View{JSON: v.Envelope})
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: runShowJSON{runJSON: toRunJSON(v.Run), URL: check.RedactURL(v.EndpointURL), Result: v.Result,
			EnvelopeVerified: v.Verified, EnvelopeError: v.VerifyError},
		Text: func() error { return writeRunShow(f.IO, v) },
	})
}

// writeRunShow prints one run, its times in the zone --tz chose.
func writeRunShow(io *render.Streams, v history.RunView) error {
	w := io.Out
	var res check.Result
	_ = json.Unmarshal(v.Result, &res) // a result a newer release wrote still shows what this one knows
	why := v.Outcome
	if m := runWhy(v.Run); m != "" {
		why += ": " + m
	}
	if v.ProbectlFault {
		why += " (at probectl's fault: not counted against the server)"
	}
	round := idText(v.RoundID)
	if v.RoundDegraded {
		round += ", degraded"
	}
	kv := render.NewTable(w, "RUN", fmt.Sprintf("%d (job %d, round %s)", v.ID, v.JobID, round))
	kv.Row("server", fmt.Sprintf("%s (%s) %s", v.Server, v.Kind, check.RedactURL(v.EndpointURL)))
	kv.Row("outcome", why)
	kv.Row("started", io.TimeNano(v.StartedAt))
	kv.Row("duration", render.Duration(v.Duration()))
	if res.ServerName != "" || res.Tools != nil {
		tools := "-"
		if res.Tools != nil {
			tools = strconv.Itoa(*res.Tools)
			if res.ToolsTruncated {
				tools += " (at least: tools/list had more pages)"
			}
		}
		kv.Row("mcp", fmt.Sprintf("server %s, tools %s", dash(res.ServerName), tools))
	}
	if res.ToolDefinitionsCut > 0 {
		kv.Row("tool definitions", fmt.Sprintf("%d not stored: over the bytes a run or the server's day may store "+
			"(their fingerprints are in the run)", res.ToolDefinitionsCut))
	}
	if res.ToolNamesCut > 0 {
		kv.Row("tool names", fmt.Sprintf("%d cut to %d bytes (ending in …; their fingerprints are of the whole definitions)",
			res.ToolNamesCut, check.MaxToolNameBytes))
	}
	if v.RoundDegraded {
		kv.Row("round", "degraded: too many of the round's checks failed at once, so its failures "+
			"counted toward no server's down threshold (docs/alerts.md)")
	}
	kv.Row("envelope", envelopeText(v))
	if err := kv.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nrequests (%d)\n", v.Requests); err != nil {
		return err
	}
	tbl := render.NewTable(w, "#", "METHOD", "URL", "RPC", "STATUS", "LATENCY", "BYTES", "TLS", "ERROR")
	for i, r := range res.Requests {
		status, tlsText := "-", "-"
		if r.Status != 0 {
			status = strconv.Itoa(r.Status)
		}
		if r.TLS != nil {
			tlsText = fmt.Sprintf("%s, cert until %s", r.TLS.Version, io.Date(r.TLS.CertNotAfter))
		}
		tbl.Row(i+1, r.Method, r.URL, dash(r.RPC), status, render.Duration(time.Duration(r.LatencySeconds*float64(time.Second))),
			r.Bytes, tlsText, dash(r.Error))
	}
	return tbl.Render()
}

func envelopeText(v history.RunView) string {
	switch {
	case v.Verified == nil:
		return "missing: the run was stored unsigned"
	case *v.Verified:
		return "verified against the registered keys (key " + derefOr(v.KeyID, "?") + ")"
	}
	return "DOES NOT VERIFY: " + v.VerifyError
}

func derefOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}
