package statuspage

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/status"
)

// MetricsContentType is the Prometheus text exposition format, version 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// writeMetrics writes the report as a handful of gauges (and one counter) in the Prometheus text
// format. Written by hand: a dozen lines do not need a client library.
func writeMetrics(w io.Writer, r *status.Report, took time.Duration) {
	m := &metricWriter{w: bufio.NewWriter(w)}
	defer m.w.Flush()

	m.family("probectl_due_servers", "gauge", "Active servers whose next check time has passed.")
	m.sample("probectl_due_servers", nil, float64(r.Due.Count))
	m.family("probectl_due_servers_with_open_job", "gauge", "Due servers a round is checking (an open job within the in-flight window).")
	m.sample("probectl_due_servers_with_open_job", nil, float64(r.Due.Held))
	m.family("probectl_oldest_due_server_overdue_seconds", "gauge", "How long the server waiting longest has been due (0 when none is).")
	var overdue time.Duration
	if r.Due.Oldest != nil {
		overdue = r.Due.Oldest.Overdue
	}
	m.sample("probectl_oldest_due_server_overdue_seconds", nil, overdue.Seconds())

	m.family("probectl_open_jobs", "gauge", "Jobs claimed and not finished.")
	m.sample("probectl_open_jobs", nil, float64(r.OpenCount))
	m.family("probectl_stale_jobs", "gauge", "Open jobs past the in-flight window: their probe is presumed dead.")
	m.sample("probectl_stale_jobs", nil, float64(r.StaleCount))
	m.family("probectl_oldest_open_job_age_seconds", "gauge", "Age of the oldest open job (0 when none is open).")
	var oldest time.Duration
	if len(r.OpenJobs) > 0 {
		oldest = r.OpenJobs[0].Age
	}
	m.sample("probectl_oldest_open_job_age_seconds", nil, oldest.Seconds())

	m.family("probectl_rounds_total", "counter", "Rounds ever recorded.")
	m.sample("probectl_rounds_total", nil, float64(r.RoundsTotal))
	m.family("probectl_last_round_start_timestamp_seconds", "gauge", "Start of the latest round, in Unix seconds (absent before the first round).")
	if len(r.RecentRounds) > 0 {
		m.sample("probectl_last_round_start_timestamp_seconds", nil, float64(r.RecentRounds[0].StartedAt.UnixMilli())/1000)
	}

	m.family("probectl_duplicate_pairs_24h", "gauge", "Duplicate claims (two jobs of one server less than 10 min apart) requested in the last 24 h, by class.")
	for _, c := range audit.Classes {
		n := 0
		if r.Duplicates.Report != nil {
			n = r.Duplicates.Report.Count(c)
		}
		m.sample("probectl_duplicate_pairs_24h", []string{"class", string(c)}, float64(n))
	}
	m.family("probectl_unexplained_duplicate_pairs_24h", "gauge", "Duplicate claims in the last 24 h that are not explicit re-checks.")
	m.sample("probectl_unexplained_duplicate_pairs_24h", nil, float64(r.Duplicates.Unexplained()))

	m.family("probectl_active_release_info", "gauge", "The active release (absent when there is none).")
	if rel := r.ActiveRelease; rel != nil {
		m.sample("probectl_active_release_info", []string{"version", rel.Version, "kind", rel.Kind}, 1)
		m.family("probectl_active_release_fanout", "gauge", "Fan-out messages per round of the active release.")
		m.sample("probectl_active_release_fanout", nil, float64(rel.Fanout))
	}

	if r.Standby != nil {
		m.family("probectl_standby_replay_lag_seconds", "gauge", "How far the hot standby this page reads (--read-database-url) is behind its primary.")
		m.sample("probectl_standby_replay_lag_seconds", nil, r.Standby.ReplayLag.Seconds())
	}

	m.family("probectl_status_read_seconds", "gauge", "How long reading this report from the database took.")
	m.sample("probectl_status_read_seconds", nil, took.Seconds())
}

type metricWriter struct{ w *bufio.Writer }

func (m *metricWriter) family(name, typ, help string) {
	fmt.Fprintf(m.w, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// sample writes one line; labels are name, value pairs.
func (m *metricWriter) sample(name string, labels []string, v float64) {
	m.w.WriteString(name)
	if len(labels) > 0 {
		m.w.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				m.w.WriteByte(',')
			}
			fmt.Fprintf(m.w, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
		}
		m.w.WriteByte('}')
	}
	m.w.WriteByte(' ')
	m.w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	m.w.WriteByte('\n')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }
