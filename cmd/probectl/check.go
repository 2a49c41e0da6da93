package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
)

type checkOptions struct {
	f          *factory
	URL        string
	Kind       string
	Transport  string
	SigningKey string
	Settings   probe.Settings
}

func newCheckCmd(f *factory) *cobra.Command {
	opts := &checkOptions{f: f, Settings: settings.Default()}
	cmd := &cobra.Command{
		Use:   "check URL [--kind mcp|http] [--transport streamable-http|sse] [--allow-private-targets]",
		Short: "Check one server now, as a round would, without a database",
		Long: `Check one server now and print exactly what probectl sees: the same checker, the same budget
of at most 8 requests (counted at the wire), the same SSRF guard, timeout and body cap as a round.
No database is touched; none needs to be configured.

It prints the outcome, each request (method, redacted URL, status, latency, bytes, TLS), and for an
mcp server what the server is: transport, protocol version, name and version, capabilities, tools
with their fingerprints, auth. -o json prints the result as a round would store it (the same
keys); with --signing-key it prints {"result": ..., "envelope": ...}, the envelope being the DSSE
envelope a round would store (job and round 0).

--kind defaults to mcp when the URL's path ends in /mcp or /sse, else http. Exit 0 when the check
is ok, 1 when the server answered wrongly (failed), 3 when the check could not be made (error),
2 for bad input. A URL the SSRF guard refuses is bad input: exit 2, nothing sent, and the error
says why (a loopback or private address needs --allow-private-targets; a cloud metadata endpoint
or a link-local address is refused whatever the flags). A redirect to such an address is the
server's doing: failed, exit 1.

` + metadataHelp(),
		Example: `  probectl check https://weather.example/mcp
  probectl check https://legacy.example/sse --transport sse -o json
  probectl check https://status.example/health --kind http
  probectl check http://127.0.0.1:8080/mcp --allow-private-targets --signing-key probe.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URL = args[0]
			return runCheck(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Kind, "kind", "", "mcp or http (default: mcp when the path ends in /mcp or /sse, else http)")
	fl.StringVar(&opts.Transport, "transport", "", "an mcp server's transport: streamable-http (the default) or sse")
	fl.BoolVar(&opts.Settings.AllowPrivateTargets, "allow-private-targets", false, "allow loopback and private addresses, a test network (never cloud metadata or link-local)")
	addSettingFlags(fl, &opts.Settings, func(f settings.Field) bool { return slices.Contains(checkSettings, f.Name) })
	fl.StringVar(&opts.SigningKey, "signing-key", "", "ed25519 private key file: also print the signed envelope")
	return cmd
}

// checkSettings are the round settings check takes from the field table: their flags, usage and
// bounds are a round's.
var checkSettings = []settings.Setting{settings.RequestTimeout, settings.MaxBody}

// metadataHelp lists the guard's table of cloud metadata endpoints, with their sources.
func metadataHelp() string {
	var b strings.Builder
	b.WriteString("Refused whatever the flags: 169.254.0.0/16, fe80::/10, and these cloud metadata endpoints\n")
	b.WriteString("(also inside IPv4-mapped, IPv4-compatible, NAT64 and 6to4 addresses):\n")
	for _, e := range check.MetadataEndpoints() {
		fmt.Fprintf(&b, "  %-16s %s\n", e.Addr, e.What)
		for _, src := range strings.Split(e.Source, "; ") {
			fmt.Fprintf(&b, "  %-16s %s\n", "", src)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func runCheck(ctx context.Context, opts *checkOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if err := opts.validate(); err != nil {
		return err
	}
	one := probe.OneCheck{URL: opts.URL, Kind: opts.Kind, Transport: opts.Transport, Settings: opts.Settings}
	if opts.SigningKey != "" {
		s, err := attest.LoadSigner(opts.SigningKey)
		if err != nil {
			return exit.UsageError(fmt.Errorf("--signing-key: %w", err))
		}
		one.Signer = s
	}
	out, err := probe.CheckOne(ctx, one)
	var refused *check.RefusedError
	if errors.As(err, &refused) {
		hint := "add --allow-private-targets to check a server on a test network"
		if refused.Always {
			hint = "no flag allows it"
		}
		return exit.UsageError(fmt.Errorf("URL: %s; nothing was sent (%s)", refused.Error(), hint))
	}
	if err != nil {
		return err
	}
	// A signed check is its result and envelope; an unsigned one, its result alone.
	var asJSON any = out.Result
	if out.Envelope != nil {
		asJSON = struct {
			Result   check.Result    `json:"result"`
			Envelope json.RawMessage `json:"envelope"`
		}{out.Result, out.Envelope}
	}
	view := render.View{JSON: asJSON, Text: func() error { return writeCheck(f.IO, out) }}
	if err := render.Output(f.IO.Out, format, view); err != nil {
		return err
	}
	switch out.Result.Outcome {
	case check.OutcomeFailed:
		return &silentError{code: exit.Found}
	case check.OutcomeError:
		return &silentError{code: exit.Unavailable}
	}
	return nil
}

// validate refuses bad flags before anything is sent.
func (o *checkOptions) validate() error {
	switch o.Kind {
	case "", "mcp", "http":
	default:
		return exit.UsageError(fmt.Errorf("--kind %q: must be mcp or http", o.Kind))
	}
	switch o.Transport {
	case "", check.TransportStreamableHTTP, check.TransportSSE:
	default:
		return exit.UsageError(fmt.Errorf("--transport %q: must be streamable-http or sse", o.Transport))
	}
	if o.Transport != "" && (o.Kind == "http" || (o.Kind == "" && probe.GuessKind(o.URL) == "http")) {
		return exit.UsageError(fmt.Errorf("--transport: only mcp servers have a transport (add --kind mcp)"))
	}
	if err := o.Settings.Check(checkSettings...); err != nil {
		return err
	}
	// The URL a round could hold: the directory's rule (length, scheme, host, no credentials).
	if err := directory.ValidateURL(o.URL); err != nil {
		return exit.UsageError(fmt.Errorf("URL%w", err))
	}
	return nil
}
