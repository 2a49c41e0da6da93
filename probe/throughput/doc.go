// Package throughput holds only a benchmark: probectl's claim + check + finish beside River's
// fetch + work + complete, side by side in one run on one database, so that the claim path's
// ceiling is measured rather than asserted. Nothing in the binary imports it, and River is a
// dependency of its tests only. See docs/scale.md for the figures and how to run it.
package throughput
