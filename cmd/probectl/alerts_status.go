package main

import (
	"fmt"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
)

// writeOpenAlerts adds the report's open alerts to 'status': the servers down now, with when each
// went down and how its deliveries went (the same alerts -o json shows). Nothing is printed when
// none is open.
func writeOpenAlerts(p *statusPrinter, io *render.Streams, st render.Styles, r *status.Report) {
	if len(r.Alerts) == 0 {
		return
	}
	p.title(st, "OPEN ALERTS")
	tbl := render.NewTable(io.Out, "SERVER", io.TimeHeader("DOWN SINCE"), "RUNS", "DELIVERIES")
	for _, a := range r.Alerts {
		tbl.Row(dashIfNone(&a.Server), io.Time(a.OpenedAt), runsList(a.Runs), deliveriesText(a.Deliveries))
	}
	p.table(tbl)
	if more := r.AlertsTotal - len(r.Alerts); more > 0 {
		p.linef("... and %d more: probectl alerts list --open", more)
	}
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
