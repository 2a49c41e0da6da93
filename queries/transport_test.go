package queries_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// previousUpsertServer is the previous release's UpsertServer, verbatim: it never names
// servers.transport. Migration 00006 must leave it working, and what it writes must read back as
// the default transport, so a rollback to that binary (or a mixed fleet) stays safe.
const previousUpsertServer = `
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, next_check_at, created_at)
VALUES ($1, $2, $3, $4, make_interval(secs => $5::float8),
        coalesce($6::timestamptz, now()), coalesce($6::timestamptz, now()))
ON CONFLICT (slug) DO UPDATE
   SET endpoint_url   = EXCLUDED.endpoint_url,
       kind           = EXCLUDED.kind,
       plan           = EXCLUDED.plan,
       check_interval = EXCLUDED.check_interval
RETURNING id, (xmax = 0) AS inserted`

func TestThePreviousBinarysServersReadAsTheDefaultTransport(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	due := now.Add(-time.Hour)
	for _, s := range []struct{ slug, kind string }{{"old-mcp", "mcp"}, {"old-http", "http"}} {
		var id int64
		var inserted bool
		require.NoError(t, pool.QueryRow(t.Context(), previousUpsertServer, s.slug, "https://"+s.slug+".example/",
			s.kind, "standard", (12*time.Hour).Seconds(), due).Scan(&id, &inserted))
		require.True(t, inserted)
	}
	sse := testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{Slug: "new-sse", Kind: "mcp", NextCheckAt: &due})
	_, err := pool.Exec(t.Context(), `UPDATE servers SET transport = 'sse' WHERE id = $1`, sse)
	require.NoError(t, err)

	servers, err := queries.ListServers(t.Context(), pool, "")
	require.NoError(t, err)
	got := map[string]*string{}
	for _, s := range servers {
		got[s.Slug] = s.Transport
	}
	require.Equal(t, "sse", *got["new-sse"])
	require.Equal(t, "streamable-http", *got["old-mcp"])
	require.Nil(t, got["old-http"])

	round := testfactory.Round(t.Context(), t, pool, nil)
	jobs, err := queries.Claim(t.Context(), pool, queries.ClaimParams{RoundID: round, Limit: 10, Now: &now})
	require.NoError(t, err)
	claimed := map[string]string{}
	for _, j := range jobs {
		claimed[j.Slug] = j.Transport
	}
	require.Equal(t, map[string]string{"old-mcp": "streamable-http", "old-http": "", "new-sse": "sse"}, claimed)

	_, err = pool.Exec(t.Context(), `UPDATE servers SET transport = 'websocket' WHERE id = $1`, sse)
	require.ErrorContains(t, err, "servers_transport_check", "the column holds only the registry's two types")
}
