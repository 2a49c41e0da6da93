package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

func newReceiversCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receivers <command>",
		Short: "Manage where alert events are sent",
		Long: `A receiver takes alert events ('probectl alerts') in one of three formats:

  standard-webhooks  a signed JSON POST (Standard Webhooks: headers webhook-id, the event's id,
                     the same on every retry; webhook-timestamp; webhook-signature "v1,<base64
                     HMAC-SHA256>"), keyed by a secret file holding whsec_<base64>
  slack              a Slack incoming-webhook body (text and blocks)
  alertmanager       Alertmanager's POST /api/v2/alerts (give its base URL); open alerts are sent
                     again every resend_every so Alertmanager keeps them firing

Receivers live in the database like the directory. Their URLs are printed redacted (a Slack URL
is itself a secret) and secrets are never printed. A receiver's address may be private (an
Alertmanager usually is) but never a cloud metadata endpoint.`,
		Example: `  probectl receivers add oncall --url https://hooks.example/probectl --format standard-webhooks --secret-file /etc/probectl/oncall.secret
  probectl receivers add am --url http://alertmanager.internal:9093 --format alertmanager --events server.down,server.recovered
  probectl receivers list
  probectl receivers test oncall
  probectl receivers remove oncall`,
	}
	cmd.AddCommand(newReceiversAddCmd(f), newReceiversListCmd(f), newReceiversRemoveCmd(f), newReceiversTestCmd(f))
	return cmd
}

type receiversAddOptions struct {
	f          *factory
	URL        string
	Format     string
	SecretFile string
	Events     string
	// EventsGiven: --events was given, even empty (which names no type: refused).
	EventsGiven bool
}

// maxSecretFile bounds the secret file read.
const maxSecretFile = 4 << 10

func newReceiversAddCmd(f *factory) *cobra.Command {
	opts := &receiversAddOptions{f: f}
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a receiver of alert events",
		Long: `Add a receiver. NAME is 1 to 63 of a-z, 0-9, '.', '_' and '-'. --events is a comma-separated
list among server.down, server.recovered, server.tools_changed, server.auth_changed,
prober.degraded, round.dead and verify.failed (default: all); a receiver of round.dead also gets
its round.recovered, when runs recover completes the round. A standard-webhooks receiver needs
--secret-file: a file holding whsec_ and the base64 of 24 to 64 random bytes, e.g.
  echo "whsec_$(head -c 32 /dev/urandom | base64)" > oncall.secret
The receiver gets the events stored from then on.`,
		Example: `  probectl receivers add oncall --url https://hooks.example/probectl --format standard-webhooks --secret-file oncall.secret
  probectl receivers add chat --url "$SLACK_WEBHOOK_URL" --format slack --events server.down,server.recovered,prober.degraded
  probectl receivers add am --url http://alertmanager.internal:9093 --format alertmanager`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.EventsGiven = cmd.Flags().Changed("events")
			return runReceiversAdd(cmd.Context(), opts, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.URL, "url", "", "where to POST (http or https)")
	fl.StringVar(&opts.Format, "format", "", "standard-webhooks, slack or alertmanager")
	fl.StringVar(&opts.SecretFile, "secret-file", "", "standard-webhooks: a file holding whsec_<base64>")
	fl.StringVar(&opts.Events, "events", "", "comma-separated event types (default: all)")
	return cmd
}

func runReceiversAdd(ctx context.Context, opts *receiversAddOptions, name string) error {
	f := opts.f
	if _, err := f.OutputFormat("table"); err != nil {
		return err
	}
	r := alerts.NewReceiver{Name: name, URL: opts.URL, Format: opts.Format}
	// --events given empty names no event type (the domain refuses it); left out, it means all.
	if opts.EventsGiven {
		r.Events = strings.Split(opts.Events, ",")
	}
	if opts.SecretFile != "" {
		secret, err := readBounded(opts.SecretFile, maxSecretFile)
		if err != nil {
			return exit.UsageError(fmt.Errorf("--secret-file: %w", err))
		}
		r.Secret = secret
	}
	if err := alertsError(r.Check()); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	if err := alertsError(alerts.AddReceiver(ctx, pool, r, actorFrom(f, ""))); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "receiver %s added (%s, %s)\n", name, opts.Format, alerts.RedactURL(opts.URL))
	return nil
}

type receiversListOptions struct{ f *factory }

// receiverJSON is the documented JSON shape of a receiver in 'receivers list': never its secret,
// its URL redacted.
type receiverJSON struct {
	Name      string    `json:"name"`
	URL       string    `json:"url"`
	Format    string    `json:"format"`
	HasSecret bool      `json:"has_secret"`
	Events    []string  `json:"events"`
	CreatedAt time.Time `json:"created_at"`
}

func newReceiversListCmd(f *factory) *cobra.Command {
	opts := &receiversListOptions{f: f}
	return &cobra.Command{
		Use:   "list",
		Short: "List the receivers (URLs redacted)",
		Long: `List the receivers by name: format, URL (scheme and host only: a path may be a secret),
whether a secret is stored, and the events each takes.`,
		Example: `  probectl receivers list
  probectl receivers list -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runReceiversList(cmd.Context(), opts) },
	}
}

func runReceiversList(ctx context.Context, opts *receiversListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	rs, err := alerts.ListReceivers(ctx, pool)
	if err != nil {
		return err
	}
	out := make([]receiverJSON, 0, len(rs))
	for _, r := range rs {
		out = append(out, receiverJSON{Name: r.Name, URL: alerts.RedactURL(r.URL), Format: r.Format,
			HasSecret: r.HasSecret, Events: r.Events, CreatedAt: r.CreatedAt})
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		tbl := render.NewTable(f.IO.Out, "NAME", "FORMAT", "URL", "SECRET", "EVENTS")
		for _, r := range rs {
			secret := "-"
			if r.HasSecret {
				secret = "stored"
			}
			events := strings.Join(r.Events, ",")
			if len(r.Events) == len(alerts.EventTypes) {
				events = "all"
			}
			tbl.Row(r.Name, r.Format, alerts.RedactURL(r.URL), secret, events)
		}
		return tbl.Render()
	}})
}

type receiversNameOptions struct{ f *factory }

func newReceiversRemoveCmd(f *factory) *cobra.Command {
	opts := &receiversNameOptions{f: f}
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a receiver",
		Long: `Remove a receiver: it gets no more events, and its pending deliveries end as failed. Its
deliveries' history stays (alerts list).`,
		Example: `  probectl receivers remove oncall`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.f.OutputFormat("table"); err != nil {
				return err
			}
			pool, err := opts.f.Pool(cmd.Context())
			if err != nil {
				return err
			}
			ended, err := alerts.RemoveReceiver(cmd.Context(), pool, args[0])
			if err != nil {
				return alertsError(err)
			}
			fmt.Fprintf(opts.f.IO.Out, "receiver %s removed; %d pending deliveries ended\n", args[0], ended)
			return nil
		},
	}
}

func newReceiversTestCmd(f *factory) *cobra.Command {
	opts := &receiversNameOptions{f: f}
	return &cobra.Command{
		Use:   "test NAME",
		Short: "Send one test event to a receiver now and print its answer",
		Long: `Send one event of type "test" (signed, for a standard-webhooks receiver) to the receiver now,
and print what it answered: the status and the start of its body. Nothing is stored. Exit 1 when
it answered anything but 2xx, 3 when it could not be reached (or its address was refused).`,
		Example: `  probectl receivers test oncall`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := opts.f.OutputFormat("table"); err != nil {
				return err
			}
			pool, err := opts.f.Pool(cmd.Context())
			if err != nil {
				return err
			}
			ans, id, err := alerts.Test(cmd.Context(), pool, alerts.NewSender(), args[0])
			if err != nil {
				if id == "" {
					return alertsError(err)
				}
				return exit.UnavailableError(fmt.Errorf("receiver %s: %s", args[0], alerts.SafeError(err)))
			}
			out := opts.f.IO.Out
			fmt.Fprintf(out, "test event %s: %s answered %d\n", id, args[0], ans.Status)
			if body := strings.TrimSpace(string(ans.Body)); body != "" {
				fmt.Fprintln(out, render.Printable(body))
			}
			if !ans.OK() {
				return &silentError{code: exit.Found}
			}
			return nil
		},
	}
}
