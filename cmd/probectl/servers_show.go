package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

type serversShowOptions struct {
	f    *factory
	Slug string
}

func newServersShowCmd(f *factory) *cobra.Command {
	opts := &serversShowOptions{f: f}
	cmd := &cobra.Command{
		Use:   "show SLUG",
		Short: "Show one server: status, next check, uptime, latency, certificate, tools, last runs",
		Long: fmt.Sprintf(`Show what a maintainer asks about one server, every figure computed from its stored runs:

  status       active, paused or delisted, and who changed it last and why
  next check   when it will be claimed and why then (due, spacing guard, open job, schedule)
  uptime       over 24 h, 7 d and 30 d: runs ok over runs not at probectl's own fault
               (interrupted, fenced or stored late by probectl); null when there is none
  latency      p50 and p95 of its ok checks over 30 days
  certificate  expiry and days left, from its newest run within 30 days that saw one
  tools        the tool count its newest MCP run listed, and since when it has been that count;
               'auth required, tools not verified' when its newest run met a bearer challenge
  last runs    its last %d runs, as 'runs list' shows them`, history.LastRuns),
		Example: `  probectl servers show weather
  probectl servers show weather -o json | jq .uptime
  probectl runs list --server weather --outcome failed,error`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Slug = args[0]
			return runServersShow(cmd.Context(), opts)
		},
	}
	return cmd
}

// serverShowJSON is the documented JSON shape of 'servers show'.
type serverShowJSON struct {
	At             time.Time            `json:"at"`
	Server         serverJSON           `json:"server"`
	StatusChange   *statusChangeRecJSON `json:"status_change"`
	NextCheck      nextCheckJSON        `json:"next_check"`
	Uptime         map[string]*float64  `json:"uptime"`
	LatencySeconds map[string]*float64  `json:"latency_seconds"`
	TLS            *tlsJSON             `json:"tls"`
	Tools          *toolsJSON           `json:"tools"`
	Auth           *string              `json:"auth"`
	LastRuns       []runJSON            `json:"last_runs"`
}

type statusChangeRecJSON struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Reason    string    `json:"reason"`
	ChangedBy string    `json:"changed_by"`
	ChangedAt time.Time `json:"changed_at"`
}

type nextCheckJSON struct {
	State string     `json:"state"`
	At    *time.Time `json:"at"`
	Why   string     `json:"why"`
}

type tlsJSON struct {
	CertNotAfter time.Time `json:"cert_not_after"`
	DaysLeft     int       `json:"days_left"`
	SeenAt       time.Time `json:"seen_at"`
}

type toolsJSON struct {
	Count     int       `json:"count"`
	ChangedAt time.Time `json:"changed_at"`
}

func toServerShowJSON(v *history.ServerView) serverShowJSON {
	out := serverShowJSON{At: v.At, Server: toServerJSON(v.Server),
		NextCheck:      nextCheckJSON{State: v.Next.State, At: v.Next.At, Why: v.Next.Why},
		Uptime:         map[string]*float64{"24h": v.Uptime24h, "7d": v.Uptime7d, "30d": v.Uptime30d},
		LatencySeconds: map[string]*float64{"p50": durationSeconds(v.LatencyP50), "p95": durationSeconds(v.LatencyP95)},
		LastRuns:       toRunsJSON(v.LastRuns)}
	if c := v.StatusChange; c != nil {
		out.StatusChange = &statusChangeRecJSON{From: c.StatusFrom, To: c.StatusTo, Reason: c.Reason, ChangedBy: c.ChangedBy, ChangedAt: c.ChangedAt.UTC()}
	}
	if v.Cert != nil {
		out.TLS = &tlsJSON{CertNotAfter: v.Cert.CertNotAfter.UTC(), DaysLeft: *v.CertDaysLeft(), SeenAt: v.Cert.SeenAt.UTC()}
	}
	if v.Tools != nil {
		out.Tools = &toolsJSON{Count: v.Tools.Count, ChangedAt: v.Tools.ChangedAt.UTC()}
	}
	if v.Auth != "" {
		out.Auth = &v.Auth
	}
	return out
}

func durationSeconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
}

func runServersShow(ctx context.Context, opts *serversShowOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	v, err := history.ShowServer(ctx, pool, opts.Slug, f.readAt())
	if errors.Is(err, queries.ErrNoServer) {
		return exit.UsageError(fmt.Errorf("server %q: %w; 'probectl servers list' shows them", opts.Slug, directory.ErrUnknownServer))
	}
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{JSON: toServerShowJSON(v),
		Text: func() error { return writeServerShow(f.IO, v) }})
}

func writeServerShow(io *render.Streams, v *history.ServerView) error {
	w := io.Out
	s := v.Server
	kv := render.NewTable(w, "SERVER", fmt.Sprintf("%s (%s, %s plan: every %s)", s.Slug, s.Kind, s.Plan, render.Duration(s.CheckInterval)))
	kv.Row("url", check.RedactURL(s.EndpointURL))
	status := s.Status
	if c := v.StatusChange; c != nil {
		status += fmt.Sprintf(" (%s -> %s by %s at %s: %s)", c.StatusFrom, c.StatusTo, c.ChangedBy, io.Time(c.ChangedAt), c.Reason)
	}
	kv.Row("status", status)
	next := v.Next.State
	if v.Next.At != nil {
		next = io.Time(*v.Next.At) + " (" + v.Next.State + ")"
	}
	kv.Row("next check", next+": "+v.Next.Why)
	kv.Row("uptime", fmt.Sprintf("24h %s  7d %s  30d %s", percent(v.Uptime24h), percent(v.Uptime7d), percent(v.Uptime30d)))
	lat := "-"
	if v.LatencyP50 != nil {
		lat = fmt.Sprintf("p50 %s  p95 %s (ok checks, 30 d)", render.Duration(*v.LatencyP50), render.Duration(*v.LatencyP95))
	}
	kv.Row("latency", lat)
	cert := "-"
	if v.Cert != nil {
		cert = fmt.Sprintf("valid until %s (%d days left), seen %s", io.Time(v.Cert.CertNotAfter),
			*v.CertDaysLeft(), io.Time(v.Cert.SeenAt))
	}
	kv.Row("certificate", cert)
	tools := "-"
	if v.Tools != nil {
		tools = fmt.Sprintf("%d, since %s", v.Tools.Count, io.Time(v.Tools.ChangedAt))
	}
	if v.AuthRequired() {
		tools = "auth required, tools not verified"
	}
	kv.Row("tools", tools)
	if err := kv.Render(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nlast runs (probectl runs list --server %s)\n", s.Slug); err != nil {
		return err
	}
	return writeRunsTable(io, v.LastRuns)
}

// percent prints an uptime fraction as a percentage, "-" when there is none.
func percent(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f*100, 'f', 1, 64) + "%"
}
