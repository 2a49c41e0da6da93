// Package directory manages the servers that probectl checks: it validates and imports them (CSV or
// JSON lines, all or nothing), adds one, lists them and records a maintainer's re-check.
package directory
