package main

import (
	"context"
	"fmt"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// maxStatusAlerts bounds the open alerts 'status' lists ('alerts list --open' lists them all).
const maxStatusAlerts = 20

// writeOpenAlerts adds the open alerts to 'status': the servers down now, with when each went
// down and how its deliveries went. Nothing is printed when none is open.
func writeOpenAlerts(ctx context.Context, f *factory, db queries.DBTX) error {
	open, err := alerts.List(ctx, db, alerts.ListOptions{Open: true, Limit: maxStatusAlerts + 1})
	if err != nil {
		return exit.UnavailableError(err)
	}
	if len(open) == 0 {
		return nil
	}
	st := render.StylesFor(f.IO)
	w := f.IO.Out
	fmt.Fprintln(w)
	fmt.Fprintln(w, st.Title.Render("OPEN ALERTS"))
	shown := open[:min(len(open), maxStatusAlerts)]
	tbl := render.NewTable(w, "SERVER", f.IO.TimeHeader("DOWN SINCE"), "RUNS", "DELIVERIES")
	for _, e := range shown {
		tbl.Row(dashIfNone(e.Server), f.IO.Time(e.CreatedAt), runsList(e.Runs), deliveriesText(e))
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	if len(open) > maxStatusAlerts {
		fmt.Fprintf(w, "... and more: probectl alerts list --open\n")
	}
	return nil
}

func runsList(runs []int64) string {
	out := ""
	for i, r := range runs {
		if i > 0 {
			out += ","
		}
		out += fmt.Sprint(r)
	}
	if out == "" {
		return "-"
	}
	return out
}
