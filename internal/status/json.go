package status

import (
	"encoding/json"
	"time"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// The JSON shape is part of the contract (docs/status.md): snake_case keys, RFC 3339 UTC times,
// durations in seconds (numbers with three decimals, as the audit writes them), null for what is
// absent. `probectl status -o json` and /status.json write the same bytes.

type reportJSON struct {
	GeneratedAt           time.Time      `json:"generated_at"`
	InFlightWindowSeconds audit.Seconds  `json:"in_flight_window_seconds"`
	ActiveRelease         *releaseJSON   `json:"active_release"`
	DueServers            dueJSON        `json:"due_servers"`
	OpenJobsTotal         int            `json:"open_jobs_total"`
	StaleJobsTotal        int            `json:"stale_jobs_total"`
	OpenJobs              []openJobJSON  `json:"open_jobs"`
	RoundsTotal           int64          `json:"rounds_total"`
	RecentRounds          []roundJSON    `json:"recent_rounds"`
	Duplicates24h         duplicatesJSON `json:"duplicates_24h"`
	Spool                 *spoolJSON     `json:"spool"`
	Workers               []workerJSON   `json:"workers"`
	Queue                 *queueJSON     `json:"queue"`
	// Alerts are the open alerts, newest first (at most MaxOpenAlerts; AlertsTotal counts all).
	Alerts      []alertJSON `json:"alerts"`
	AlertsTotal int         `json:"alerts_total"`
	// Standby is present only when the report was read on a hot standby.
	Standby *standbyJSON `json:"standby,omitempty"`
}

type alertJSON struct {
	ID       string    `json:"id"`
	Type     string    `json:"type"`
	Server   string    `json:"server"`
	State    string    `json:"state"`
	OpenedAt time.Time `json:"opened_at"`
	Runs     []int64   `json:"runs"`
	// one receiver's delivery each, in the shape 'alerts list' uses
	Deliveries []queries.EventDelivery `json:"deliveries"`
}

type standbyJSON struct {
	ReplayLagSeconds audit.Seconds `json:"replay_lag_seconds"`
}

// spoolJSON is what waits in the local spool: null when nothing waits (or, on serve's pages, when
// it was not looked at).
type spoolJSON struct {
	Dir      string `json:"dir"`
	Files    int    `json:"files"`
	Results  int    `json:"results"`
	SetAside int    `json:"set_aside"` // spool files and failover journals set aside for a person to read
}

type releaseJSON struct {
	ID         int64     `json:"id"`
	Version    string    `json:"version"`
	Kind       string    `json:"kind"`
	DeployedAt time.Time `json:"deployed_at"`
	DeployedBy string    `json:"deployed_by"`
	// Carried are the round settings it ships, with the keys every settings JSON uses.
	settings.Carried
	// FinishMode is Carried.Finish under the key status said before settings had one JSON shape:
	// an alias kept for one release (docs/status.md), to be removed after it.
	FinishMode string `json:"finish_mode"`
	// RoundEverySeconds is the worker's schedule; 0 when rounds run only by hand.
	RoundEverySeconds audit.Seconds `json:"round_every_seconds"`
}

type dueJSON struct {
	Count       int            `json:"count"`
	WithOpenJob int            `json:"with_open_job"`
	Oldest      *dueServerJSON `json:"oldest"`
}

type dueServerJSON struct {
	ServerID       int64         `json:"server_id"`
	Slug           string        `json:"slug"`
	NextCheckAt    time.Time     `json:"next_check_at"`
	OverdueSeconds audit.Seconds `json:"overdue_seconds"`
}

type openJobJSON struct {
	JobID          int64         `json:"job_id"`
	ServerID       int64         `json:"server_id"`
	Slug           string        `json:"slug"`
	RoundID        *int64        `json:"round_id"`
	Invocation     *int32        `json:"invocation"`
	Reason         string        `json:"reason"`
	RequestedAt    time.Time     `json:"requested_at"`
	AgeSeconds     audit.Seconds `json:"age_seconds"`
	Stale          bool          `json:"stale"`
	ServerAdvanced bool          `json:"server_advanced"`
	ServerLeased   bool          `json:"server_leased"`
	NextCheckAt    time.Time     `json:"next_check_at"`
}

type roundJSON struct {
	RoundID         int64          `json:"round_id"`
	Trigger         string         `json:"trigger"`
	Version         string         `json:"version"`
	Fanout          int            `json:"fanout"`
	ClaimLimit      int            `json:"claim_limit"`
	Concurrency     int            `json:"concurrency"`
	StartedAt       time.Time      `json:"started_at"`
	FinishedAt      *time.Time     `json:"finished_at"`
	DurationSeconds *audit.Seconds `json:"duration_seconds"`
	Jobs            int            `json:"jobs"`
	Runs            int            `json:"runs"`
	Servers         int            `json:"servers"`
	Failures        int            `json:"failures"`
	Abandoned       int            `json:"abandoned"`
	// Lost: the abandoned jobs without a run, checks the round claimed and nothing stored.
	Lost        int        `json:"lost"`
	OpenJobs    int        `json:"open_jobs"`
	State       string     `json:"state"`
	HeartbeatAt *time.Time `json:"heartbeat_at"`
	// Degraded: the storm guard judged the round degraded; its failures counted toward no
	// server's down threshold.
	Degraded bool `json:"degraded"`
}

type duplicatesJSON struct {
	Since            time.Time           `json:"since"`
	Until            time.Time           `json:"until"`
	WindowSeconds    audit.Seconds       `json:"window_seconds"`
	PairCount        int                 `json:"pair_count"`
	UnexplainedCount int                 `json:"unexplained_count"`
	Pairs            []duplicatePairJSON `json:"pairs"`
}

type duplicatePairJSON struct {
	ServerID              int64          `json:"server_id"`
	Slug                  string         `json:"slug"`
	FirstJobID            int64          `json:"first_job_id"`
	SecondJobID           int64          `json:"second_job_id"`
	SecondRequestedAt     time.Time      `json:"second_requested_at"`
	RequestGapSeconds     audit.Seconds  `json:"request_gap_seconds"`
	GapAfterFinishSeconds *audit.Seconds `json:"gap_after_finish_seconds"`
	Class                 audit.Class    `json:"class"`
}

// MarshalJSON writes the documented shape.
func (r *Report) MarshalJSON() ([]byte, error) {
	out := reportJSON{
		GeneratedAt:           r.GeneratedAt.UTC(),
		InFlightWindowSeconds: audit.Seconds(InFlight),
		DueServers:            dueJSON{Count: r.Due.Count, WithOpenJob: r.Due.Held},
		OpenJobsTotal:         r.OpenCount,
		StaleJobsTotal:        r.StaleCount,
		OpenJobs:              make([]openJobJSON, 0, len(r.OpenJobs)),
		RoundsTotal:           r.RoundsTotal,
		RecentRounds:          make([]roundJSON, 0, len(r.RecentRounds)),
		Duplicates24h: duplicatesJSON{Since: r.Duplicates.Since.UTC(), Until: r.Duplicates.Until.UTC(),
			WindowSeconds: audit.Seconds(r.Duplicates.Window), PairCount: r.Duplicates.Pairs(),
			UnexplainedCount: r.Duplicates.Unexplained(), Pairs: []duplicatePairJSON{}},
		Workers: workersJSON(r.Workers),
		Queue:   queueToJSON(r.Queue),
		Alerts:  make([]alertJSON, 0, len(r.Alerts)), AlertsTotal: r.AlertsTotal,
	}
	for _, a := range r.Alerts {
		aj := alertJSON{ID: a.ID, Type: a.Type, Server: a.Server, State: a.State, OpenedAt: a.OpenedAt.UTC(),
			Runs: append([]int64{}, a.Runs...), Deliveries: append([]queries.EventDelivery{}, a.Deliveries...)}
		out.Alerts = append(out.Alerts, aj)
	}
	if r.Standby != nil {
		out.Standby = &standbyJSON{ReplayLagSeconds: audit.Seconds(r.Standby.ReplayLag)}
	}
	if rel := r.ActiveRelease; rel != nil {
		out.ActiveRelease = &releaseJSON{ID: rel.ID, Version: rel.Version, Kind: rel.Kind,
			DeployedAt: rel.DeployedAt, DeployedBy: rel.DeployedBy, Carried: rel.Carried, FinishMode: rel.Finish,
			RoundEverySeconds: audit.Seconds(rel.Every)}
	}
	if o := r.Due.Oldest; o != nil {
		out.DueServers.Oldest = &dueServerJSON{ServerID: o.ServerID, Slug: o.Slug,
			NextCheckAt: o.NextCheckAt, OverdueSeconds: audit.Seconds(o.Overdue)}
	}
	for _, j := range r.OpenJobs {
		out.OpenJobs = append(out.OpenJobs, openJobJSON{JobID: j.JobID, ServerID: j.ServerID, Slug: j.Slug,
			RoundID: j.RoundID, Invocation: j.Invocation, Reason: j.Reason, RequestedAt: j.RequestedAt,
			AgeSeconds: audit.Seconds(j.Age), Stale: j.Stale, ServerAdvanced: j.Advanced, ServerLeased: j.Leased,
			NextCheckAt: j.NextCheckAt})
	}
	if r.Spool != nil {
		out.Spool = &spoolJSON{Dir: r.Spool.Dir, Files: r.Spool.Files, Results: r.Spool.Results, SetAside: r.Spool.SetAside}
	}
	for _, rd := range r.RecentRounds {
		rj := roundJSON{RoundID: rd.ID, Trigger: rd.Trigger, Version: rd.Version, Fanout: rd.Fanout,
			ClaimLimit: rd.ClaimLimit, Concurrency: rd.Concurrency, StartedAt: rd.StartedAt,
			Jobs: rd.Jobs, Runs: rd.Runs, Servers: rd.Servers, Failures: rd.Failures,
			Abandoned: rd.Abandoned, Lost: rd.Lost, OpenJobs: rd.OpenJobs, State: rd.State, HeartbeatAt: rd.HeartbeatAt,
			Degraded: rd.Degraded != nil}
		if rd.FinishedAt != nil {
			d := audit.Seconds(*rd.Duration())
			rj.FinishedAt, rj.DurationSeconds = rd.FinishedAt, &d
		}
		out.RecentRounds = append(out.RecentRounds, rj)
	}
	if rep := r.Duplicates.Report; rep != nil {
		for _, p := range rep.Pairs {
			var gap *audit.Seconds
			if p.GapAfterFinish != nil {
				g := audit.Seconds(*p.GapAfterFinish)
				gap = &g
			}
			out.Duplicates24h.Pairs = append(out.Duplicates24h.Pairs, duplicatePairJSON{ServerID: p.ServerID,
				Slug: p.Slug, FirstJobID: p.FirstJobID, SecondJobID: p.SecondJobID,
				SecondRequestedAt: p.SecondRequestedAt, RequestGapSeconds: audit.Seconds(p.RequestGap),
				GapAfterFinishSeconds: gap, Class: p.Class})
		}
	}
	return json.Marshal(out)
}
