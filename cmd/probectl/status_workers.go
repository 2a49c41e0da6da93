package main

import (
	"fmt"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
)

// writeWorkers prints the workers and their queue: a section only where workers ran (River's
// tables hold a queue, or a worker was heard from), so a prober run by hand sees none.
func writeWorkers(p *statusPrinter, io *render.Streams, st render.Styles, r *status.Report) {
	q := r.Queue
	if q == nil || (len(r.Workers) == 0 && *q == status.Queue{}) {
		return
	}
	p.title(st, "WORKERS")
	alive := 0
	for _, w := range r.Workers {
		if w.Alive {
			alive++
		}
	}
	retried := fmt.Sprintf("%d retried", q.Retried)
	discarded := fmt.Sprintf("%d discarded", q.Discarded)
	if q.Discarded > 0 {
		discarded = st.Fail.Render(discarded)
	}
	p.linef("%d alive of %d heard from in the last %s; queue: %d waiting, %d running, %d to retry; "+
		"in the last 24 h: %s, %s", alive, len(r.Workers), render.Duration(status.WorkersWindow), q.Waiting, q.Running,
		q.Retrying, retried, discarded)
	if r.NoWorkerAlive() {
		p.linef("%s", st.Fail.Render("no worker is alive to run the waiting invocations: start 'probectl worker'"))
	}
	if len(r.Workers) == 0 {
		return
	}
	tbl := render.NewTable(p.w, "WORKER", "STATE", "LEADER", "RUNNING", "SPOOL", "VERSION", "HOST", io.TimeHeader("HEARTBEAT"))
	for _, w := range r.Workers {
		// Cells, not strings rendered here: the table escapes a string's control characters, a
		// style's colour codes included.
		state := render.Plain("alive")
		switch {
		case w.StoppedAt != nil:
			state = render.Styled(st.Muted, "stopped")
		case !w.Alive:
			state = render.Styled(st.Fail, "dead")
		}
		leader := ""
		if w.Leader {
			leader = "leader"
		}
		spool := render.Plain(fmt.Sprint(w.SpoolResults))
		if w.SpoolResults > 0 {
			spool = render.Styled(st.Fail, fmt.Sprintf("%d in %d file(s)", w.SpoolResults, w.SpoolFiles))
		}
		if w.SpoolSetAside > 0 {
			aside := render.Styled(st.Warn, fmt.Sprintf("%d set aside", w.SpoolSetAside))
			if w.SpoolResults > 0 {
				aside = spool.Then(render.Plain(", ")).Then(aside)
			}
			spool = aside
		}
		tbl.Row(w.ID, state, leader, fmt.Sprintf("%d/%d", w.InvocationsRunning, w.MaxWorkers), spool, w.Version,
			w.Host, io.Time(w.HeartbeatAt))
	}
	p.table(tbl)
}
