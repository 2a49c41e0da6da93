package main

import (
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

	rounds     []any
	verify     []any
	duplicates any
	rollback   any
	// err is the first rendering error; the demo goes on, the command reports it.
	err error
}

// demoJSON is the documented JSON shape of 'probectl demo -o json'.
type demoJSON struct {
	Scenario        string        `json:"scenario"`
	Servers         int           `json:"servers"`
	Fleet           demoFleetJSON `json:"fleet"`
	DurationSeconds float64       `json:"duration_seconds"`
	Rounds          []any         `json:"rounds"`
	// Verify holds the deploy verify reports: of the fan-out release, then (in the replay) of the
	// rounds after the rollback.
	Verify     []any         `json:"verify"`
	Duplicates any           `json:"duplicates"`
	Rollback   any           `json:"rollback"`
	Kept       *demoKeptJSON `json:"kept"`
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
		doc.Rounds = []any{}
	}
	if doc.Verify == nil {
		doc.Verify = []any{}
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

// show writes a step's view, the one its command writes, to stdout in table mode (a blank line
// after it), and returns its JSON value for the document -o json writes at the end.
func (r *demoReporter) show(v render.View) any {
	r.fail(render.Output(r.f.IO.Out, r.format, render.View{Text: func() error {
		r.fail(v.Text())
		_, err := fmt.Fprintln(r.f.IO.Out)
		return err
	}}))
	return v.JSON
}

func (r *demoReporter) Step(n, total int, title string) {
	fmt.Fprintf(r.f.IO.ErrOut, "\n%d/%d %s…\n", n, total, title)
}

func (r *demoReporter) Say(format string, args ...any) {
	fmt.Fprintf(r.f.IO.ErrOut, "    %s\n", fmt.Sprintf(format, args...))
}

func (r *demoReporter) Round(sum *probe.Summary) {
	r.rounds = append(r.rounds, r.show(roundSummaryView(r.f, sum, nil, nil, nil)))
}

func (r *demoReporter) Verify(rep *release.Report) {
	r.verify = append(r.verify, r.show(render.View{JSON: rep, Text: func() error { return writeVerifyReport(r.f, rep) }}))
}

func (r *demoReporter) Duplicates(rep *audit.DuplicatesReport) {
	r.duplicates = r.show(render.View{JSON: rep, Text: func() error { return writeDuplicatesTable(r.f.IO, rep) }})
}

func (r *demoReporter) RollbackPlanned(plan *release.RollbackPlan, dryRun bool) {
	if !dryRun {
		// As 'rollback --yes' does: the plan before the change, in table mode only.
		r.fail(showPlan(r.f, r.format, plan))
		return
	}
	r.rollback = r.show(rollbackView(r.f, plan, true))
}

func (r *demoReporter) RolledBack(plan *release.RollbackPlan) {
	r.rollback = r.show(rollbackView(r.f, plan, false))
}
