package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/demo"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/release"
)

// demoReporter renders each step of the demo with the renderer of the command it stands for:
// narration to stderr, the command's output to stdout (tables), or collected into one JSON
// document (each part exactly what the command prints with -o json).
type demoReporter struct {
	f      *factory
	format string

	rounds     []json.RawMessage
	verify     []json.RawMessage
	duplicates json.RawMessage
	rollback   json.RawMessage
	// err is the first rendering error; the demo goes on, the command reports it.
	err error
}

// demoJSON is the documented JSON shape of 'probectl demo -o json'.
type demoJSON struct {
	Scenario        string            `json:"scenario"`
	Servers         int               `json:"servers"`
	Fleet           demoFleetJSON     `json:"fleet"`
	DurationSeconds float64           `json:"duration_seconds"`
	Rounds          []json.RawMessage `json:"rounds"`
	// Verify holds the deploy verify reports: of the fan-out release, then (in the replay) of the
	// rounds after the rollback.
	Verify     []json.RawMessage `json:"verify"`
	Duplicates json.RawMessage   `json:"duplicates"`
	Rollback   json.RawMessage   `json:"rollback"`
	Kept       *demoKeptJSON     `json:"kept"`
}

type demoFleetJSON struct {
	HTTP      int `json:"http"`
	MCP       int `json:"mcp"`
	Slow      int `json:"slow"`
	Hanging   int `json:"hanging"`
	Failing   int `json:"failing"`
	Oversized int `json:"oversized"`
}

type demoKeptJSON struct {
	DatabaseURL string `json:"database_url"`
	PID         int    `json:"pid"`
	Dir         string `json:"dir"`
}

func (r *demoReporter) document(res *demo.Result) demoJSON {
	c := res.Fleet
	doc := demoJSON{Scenario: res.Scenario, Servers: res.Servers, DurationSeconds: res.Duration.Seconds(),
		Fleet:  demoFleetJSON{HTTP: c.HTTP, MCP: c.MCP, Slow: c.Slow, Hanging: c.Hanging, Failing: c.Failing, Oversized: c.Oversized},
		Rounds: r.rounds, Verify: r.verify, Duplicates: r.duplicates, Rollback: r.rollback}
	if doc.Rounds == nil {
		doc.Rounds = []json.RawMessage{}
	}
	if doc.Verify == nil {
		doc.Verify = []json.RawMessage{}
	}
	if res.Kept != nil {
		doc.Kept = &demoKeptJSON{DatabaseURL: res.Kept.URL, PID: res.Kept.PID, Dir: res.Kept.Dir}
	}
	return doc
}

func (r *demoReporter) fail(err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}

// show renders to stdout in table mode, or captures the JSON the command would print.
func (r *demoReporter) show(table func() error, asJSON func(sub *factory) error) json.RawMessage {
	if r.format != "json" {
		r.fail(table())
		_, err := fmt.Fprintln(r.f.IO.Out)
		r.fail(err)
		return nil
	}
	var buf bytes.Buffer
	sub := newFactory(&render.Streams{Out: &buf, ErrOut: r.f.IO.ErrOut}, r.f.Getenv, r.f.Build)
	r.fail(asJSON(sub))
	raw := bytes.TrimSpace(buf.Bytes())
	if !json.Valid(raw) {
		r.fail(errors.New("demo: a step rendered invalid JSON"))
		return json.RawMessage("null")
	}
	return raw
}

func (r *demoReporter) Step(n, total int, title string) {
	fmt.Fprintf(r.f.IO.ErrOut, "\n%d/%d %s…\n", n, total, title)
}

func (r *demoReporter) Say(format string, args ...any) {
	fmt.Fprintf(r.f.IO.ErrOut, "    %s\n", fmt.Sprintf(format, args...))
}

func (r *demoReporter) Round(sum *probe.Summary) {
	raw := r.show(func() error { return renderRoundSummary(r.f, "table", sum, nil, nil, nil) },
		func(sub *factory) error { return renderRoundSummary(sub, "json", sum, nil, nil, nil) })
	if raw != nil {
		r.rounds = append(r.rounds, raw)
	}
}

func (r *demoReporter) Verify(rep *release.Report) {
	raw := r.show(func() error { return writeVerifyReport(r.f, rep) },
		func(sub *factory) error { return render.JSON(sub.IO.Out, rep) })
	if raw != nil {
		r.verify = append(r.verify, raw)
	}
}

func (r *demoReporter) Duplicates(rep *audit.DuplicatesReport) {
	r.duplicates = r.show(func() error { return writeDuplicatesTable(r.f.IO, rep) },
		func(sub *factory) error { return render.JSON(sub.IO.Out, rep) })
}

func (r *demoReporter) RollbackPlanned(plan *release.RollbackPlan, dryRun bool) {
	if !dryRun {
		// As 'rollback --yes' does: the plan before the change, in table mode only.
		if r.format != "json" {
			r.fail(showPlan(r.f, r.format, plan))
		}
		return
	}
	r.rollback = r.show(func() error { return renderRollback(r.f, "table", plan, true) },
		func(sub *factory) error { return renderRollback(sub, "json", plan, true) })
}

func (r *demoReporter) RolledBack(plan *release.RollbackPlan) {
	r.rollback = r.show(func() error { return renderRollback(r.f, "table", plan, false) },
		func(sub *factory) error { return renderRollback(sub, "json", plan, false) })
}
