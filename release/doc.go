// Package release is the release manager's side of probectl: which version runs with which round
// settings, the ways back its plan approved, post-deploy verification of the first rounds, and the
// rollbacks themselves.
//
// One release is active at a time. Recording a release makes it active; a rollback makes another
// one active, either the release that was active before (to-previous) or a copy of the current
// one with fan-out switched off (fanout-off). Every activation is a row of release_events with
// who and why, so the history survives releases being rolled back and reactivated. Changes of the
// active release are serialised by one lock and write the releases tables only: a rollback never
// touches servers, jobs, runs or rounds.
//
// Verification only reads, in one READ ONLY transaction, so it is safe on a hot standby.
package release
