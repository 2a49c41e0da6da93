package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tables follow --tz (else PROBECTL_TZ) and name the zone; JSON stays UTC whatever the zone.
func TestTablesShowTimesInTheChosenZoneAndJSONStaysUTC(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	incident(t, pool)

	flag := withDB(url).run(t, "--tz", "Asia/Shanghai", "deploy", "list")
	require.Equal(t, 0, flag.Code, flag.Stderr)
	require.Contains(t, flag.Stdout, "DEPLOYED (Asia/Shanghai)")
	require.Contains(t, flag.Stdout, "WHEN (Asia/Shanghai)")
	require.Contains(t, flag.Stdout, "2026-10-08T04:53:00+08:00", "20:53 UTC is 04:53 the next day in Shanghai")
	require.NotContains(t, flag.Stdout, "(UTC)")
	require.NotContains(t, flag.Stdout, "2026-10-07T20:53:00Z")

	c := withDB(url)
	c.env["PROBECTL_TZ"] = "Asia/Shanghai"
	env := c.run(t, "deploy", "list")
	require.Equal(t, 0, env.Code, env.Stderr)
	require.Equal(t, flag.Stdout, env.Stdout, "PROBECTL_TZ does what --tz does")

	js := c.run(t, "--tz", "Asia/Shanghai", "deploy", "list", "-o", "json")
	require.Equal(t, 0, js.Code, js.Stderr)
	require.Contains(t, js.Stdout, `"2026-10-07T20:53:00Z"`)
	require.NotContains(t, js.Stdout, "+08:00")

	// --tz wins over PROBECTL_TZ.
	utc := c.run(t, "--tz", "UTC", "deploy", "list")
	require.Equal(t, 0, utc.Code, utc.Stderr)
	require.Contains(t, utc.Stdout, "DEPLOYED (UTC)")
	require.Contains(t, utc.Stdout, "2026-10-07T20:53:00Z")
}

// A zone that does not exist is a usage error naming where it came from, found before connecting.
func TestBadZoneExitsTwoBeforeConnecting(t *testing.T) {
	t.Parallel()
	// Nothing listens on this URL: reaching the database would exit 3, not 2.
	down := "postgres://probectl@127.0.0.1:1/none?connect_timeout=1"

	res := runCLI(t, "--database-url", down, "--tz", "Mars/Olympus", "deploy", "list")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "--tz")
	require.Contains(t, res.Stderr, "Mars/Olympus")
	require.Empty(t, res.Stdout)

	res = cli{env: map[string]string{"PROBECTL_DATABASE_URL": down, "PROBECTL_TZ": "Mars/Olympus"}}.run(t, "deploy", "list")
	require.Equal(t, 2, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "PROBECTL_TZ")
	require.NotContains(t, res.Stderr, "--tz")
}

// Audit tables carry the zone too, to the millisecond; their CSV stays UTC.
func TestAuditTextFollowsTheZone(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := withDB(url).run(t, "--tz", "Asia/Shanghai", "audit", "open")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+08:00`, res.Stdout)

	res = withDB(url).run(t, "audit", "open")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Regexp(t, `as of \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`, res.Stdout)
}
