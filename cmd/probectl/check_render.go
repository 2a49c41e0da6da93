package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
)

// writeCheck prints one observation for a person: outcome, requests, and what an MCP server is.
func writeCheck(io *render.Streams, out probe.OneResult) error {
	st := render.StylesFor(io)
	w := io.Out
	res := out.Result
	outcome := st.Pass.Render(res.Outcome)
	if res.Outcome != check.OutcomeOK {
		outcome = st.Fail.Render(res.Outcome)
	}
	// The summary and the error carry what the server sent (its name, an error body, a redirect's
	// target): one line each, through the one sanitizer.
	fmt.Fprintf(w, "%s %s (%s)\n", outcome, render.Printable(res.Summary), out.Target.Kind)
	if res.Error != "" {
		fmt.Fprintf(w, "error       %s\n", render.Printable(res.Error))
	}
	fmt.Fprintf(w, "requests    %d of %d\n\n", len(res.Requests), check.MaxRequests)
	tbl := render.NewTable(w, "METHOD", "RPC", "STATUS", "LATENCY", "BYTES", "TLS", "URL")
	for _, q := range res.Requests {
		tls := "-"
		if q.TLS != nil {
			tls = fmt.Sprintf("%s, expires %s", q.TLS.Version, q.TLS.CertNotAfter.Format("2006-01-02"))
		}
		status := "-"
		if q.Status != 0 {
			status = fmt.Sprint(q.Status)
		}
		if q.Error != "" {
			status += " (" + q.Error + ")"
		}
		tbl.Row(q.Method, orText(q.RPC), status, render.Duration(time.Duration(q.LatencySeconds*float64(time.Second))), q.Bytes, tls, q.URL)
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	if out.Target.Kind != "mcp" {
		return writeEnvelope(io, out)
	}
	fmt.Fprintln(w)
	rows := [][2]string{
		{"transport", orText(res.Transport)},
		{"protocol", orText(res.ProtocolVersion)},
		{"server", strings.TrimSpace(fmt.Sprintf("%s %s", res.ServerName, res.ServerVersion))},
		{"title", orText(res.ServerTitle)},
		{"capabilities", orText(strings.Join(res.Capabilities, ", "))},
	}
	if res.Instructions != nil {
		rows = append(rows, [2]string{"instructions", fmt.Sprintf("%t (%d bytes)", res.Instructions.Present, res.Instructions.Length)})
	}
	if res.Auth != "" {
		rows = append(rows, [2]string{"auth", res.Auth + ", tools not verified; authorization servers: " +
			strings.Join(res.AuthorizationServers, ", ")})
	}
	if res.Tools != nil {
		tools := fmt.Sprint(*res.Tools)
		if res.ToolsTruncated {
			tools += " (truncated)"
		}
		rows = append(rows, [2]string{"tools", tools}, [2]string{"tools fingerprint", orText(res.ToolsFingerprint)})
	}
	if res.Resources != nil {
		rows = append(rows, [2]string{"resources", fmt.Sprint(*res.Resources)})
	}
	if res.Prompts != nil {
		rows = append(rows, [2]string{"prompts", fmt.Sprint(*res.Prompts)})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-18s%s\n", r[0], render.Printable(r[1]))
	}
	if len(res.ToolFingerprints) > 0 {
		fmt.Fprintln(w)
		tt := render.NewTable(w, "TOOL", "FINGERPRINT")
		for _, p := range res.ToolFingerprints {
			tt.Row(p.Name, p.Fingerprint)
		}
		if err := tt.Render(); err != nil {
			return err
		}
	}
	return writeEnvelope(io, out)
}

func writeEnvelope(io *render.Streams, out probe.OneResult) error {
	if out.Envelope == nil {
		return nil
	}
	_, err := fmt.Fprintf(io.Out, "\nenvelope (DSSE)\n%s\n", out.Envelope)
	return err
}

func orText(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
