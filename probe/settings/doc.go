// Package settings is the one home of how a round runs: the Settings type (its Carried part is
// what a release stores, embedded in the release's row and in the round's record), its defaults
// (Default), the field table (Fields) from which the commands' flags, the bounds, the override
// rule and the displays derive, the one place settings are made and checked (Resolve), and the
// lease arithmetic a job's worst case must fit (lease.go).
//
// Adding a setting a release carries is one row in Fields, one field in Carried and one column
// in a migration (CONTRIBUTING.md, "Adding a carried setting").
//
// The JSON form is the documented one (docs/release.md): snake_case keys, durations as seconds
// (a number, key suffixed _seconds). queries imports this package (its release row embeds
// Carried), so it imports nothing of queries.
package settings
