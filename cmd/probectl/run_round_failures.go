package main

import (
	"fmt"
	"io"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// maxFailuresShown bounds the failures the round's table lists; -o json lists them all.
const maxFailuresShown = 10

// roundFailureJSON is one server that failed or erred in 'run round -o json' failures.
type roundFailureJSON struct {
	RunID   int64   `json:"run_id"`
	Server  string  `json:"server"`
	Outcome string  `json:"outcome"`
	Summary string  `json:"summary"`
	Error   *string `json:"error"`
}

func toRoundFailuresJSON(runs []queries.Run) []roundFailureJSON {
	out := make([]roundFailureJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, roundFailureJSON{RunID: r.ID, Server: r.Server, Outcome: r.Outcome, Summary: r.Summary, Error: r.Error})
	}
	return out
}

// writeRoundFailures ends the round's table with the servers that failed or erred and why, up to
// maxFailuresShown, and where to find the rest.
func writeRoundFailures(w io.Writer, roundID int64, runs []queries.Run) error {
	if len(runs) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tbl := render.NewTable(w, "SERVER", "OUTCOME", "RUN", "WHY")
	for _, r := range runs[:min(len(runs), maxFailuresShown)] {
		tbl.Row(r.Server, r.Outcome, r.ID, runWhy(r))
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	if more := len(runs) - maxFailuresShown; more > 0 {
		_, err := fmt.Fprintf(w, "and %d more (probectl runs list --round %d --outcome failed,error)\n", more, roundID)
		return err
	}
	return nil
}
