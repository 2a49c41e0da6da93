package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

type alertsListOptions struct {
	f     *factory
	Open  bool
	Since string
	Limit int
}

func newAlertsListCmd(f *factory) *cobra.Command {
	opts := &alertsListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List alert events and their deliveries",
		Long: `List the events of the outbox, newest first: id (what a receiver sees as webhook-id), type,
server, state, when it was opened and, for a server.down alert (or a round.dead), when it was
resolved (the server, or the round, recovered); and per
receiver, the delivery's state (pending, delivered, failed), its attempts and its last error.
--open keeps the server.down alerts not resolved yet.`,
		Example: `  probectl alerts list
  probectl alerts list --open
  probectl alerts list --since 24h -o json | jq '.[] | select(.type == "server.down")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runAlertsList(cmd.Context(), opts) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Open, "open", false, "only the server.down alerts not yet resolved")
	fl.StringVar(&opts.Since, "since", "", "only events from then on: RFC 3339 or a duration back from now (24h, 7d)")
	fl.IntVar(&opts.Limit, "limit", 100, fmt.Sprintf("the most events listed, newest first (1-%d)", alerts.MaxList))
	return cmd
}

// alertJSON is the documented JSON shape of an event in 'alerts list'.
type alertJSON struct {
	ID            string                  `json:"id"`
	Type          string                  `json:"type"`
	Server        *string                 `json:"server"`
	State         *string                 `json:"state"`
	PreviousState *string                 `json:"previous_state"`
	Runs          []int64                 `json:"runs"`
	RoundID       *int64                  `json:"round_id"`
	Details       json.RawMessage         `json:"details"`
	OpenedAt      time.Time               `json:"opened_at"`
	ResolvedAt    *time.Time              `json:"resolved_at"`
	Deliveries    []queries.EventDelivery `json:"deliveries"`
}

func runAlertsList(ctx context.Context, opts *alertsListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Limit < 1 || opts.Limit > alerts.MaxList {
		return exit.UsageError(fmt.Errorf("--limit: must be 1 to %d, got %d", alerts.MaxList, opts.Limit))
	}
	lo := alerts.ListOptions{Open: opts.Open, Limit: opts.Limit}
	if opts.Since != "" {
		t, err := parseTimeFlag("since", opts.Since, f.now())
		if err != nil {
			return err
		}
		lo.Since = &t
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	list, err := alerts.List(ctx, pool, lo)
	if err != nil {
		return err
	}
	out := make([]alertJSON, 0, len(list))
	for _, e := range list {
		a := alertJSON{ID: e.ID, Type: e.Type, Server: e.Server, State: e.State, PreviousState: e.PreviousState,
			Runs: e.Runs, RoundID: e.RoundID, Details: e.Data, OpenedAt: e.CreatedAt, ResolvedAt: e.ResolvedAt,
			Deliveries: append([]queries.EventDelivery{}, e.Deliveries...)}
		if a.Runs == nil {
			a.Runs = []int64{}
		}
		out = append(out, a)
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		tbl := render.NewTable(f.IO.Out, "ID", "TYPE", "SERVER", "STATE", f.IO.TimeHeader("OPENED"),
			f.IO.TimeHeader("RESOLVED"), "DELIVERIES")
		for _, e := range list {
			resolved := "-"
			if e.ResolvedAt != nil {
				resolved = f.IO.Time(*e.ResolvedAt)
			}
			tbl.Row(e.ID, e.Type, dashIfNone(e.Server), dashIfNone(e.State), f.IO.Time(e.CreatedAt), resolved, deliveriesText(e.Deliveries))
		}
		return tbl.Render()
	}})
}

func dashIfNone(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// deliveriesText: "oncall delivered (3 attempts); pager pending (2 attempts, last: the receiver answered 503 ...)".
func deliveriesText(ds []queries.EventDelivery) string {
	if len(ds) == 0 {
		return "-"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		s := fmt.Sprintf("%s %s (%d attempts", d.Receiver, d.State, d.Attempts)
		if d.State != "delivered" && d.LastError != nil {
			s += ", last: " + render.Printable(*d.LastError)
		}
		parts[i] = s + ")"
	}
	return strings.Join(parts, "; ")
}
