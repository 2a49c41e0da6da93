// Package alerts tells people when a server goes down, comes back, changes its tools or its
// auth, and when the prober itself is in trouble (docs/alerts.md). The state and the events are
// facts of the finish: a trigger on probe_runs (queries/migrations/00016_alerts.sql) derives them
// in the transaction that stores the run and writes each event to an outbox with a delivery per
// receiver and a River job per delivery. This package manages the policy and the receivers,
// delivers (Standard Webhooks, Slack, Alertmanager), records every attempt and re-sends open
// alerts to Alertmanager; `probectl worker` runs its River jobs.
package alerts
