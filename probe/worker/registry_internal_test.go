package worker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/queries"
)

// A registry scheduled with `servers sync --every` is synced by the worker's leader, once per
// interval, and the sync is recorded for `servers sync --status`.
func TestTheWorkerSyncsAScheduledRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t, migratedInternal.NewDB(t))
	var hits atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"servers":[{"server":{"name":"io.github.acme/weather","remotes":[{"type":"sse","url":"https://weather.example/sse"}]},
			"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true,"updatedAt":"2026-02-01T00:00:00Z"}}}],
			"metadata":{"count":1}}`))
	}))
	t.Cleanup(reg.Close)
	_, err := directory.ScheduleSync(ctx, pool, reg.URL, time.Hour, "test", nil)
	require.NoError(t, err)

	cfg := Config{Pool: pool, Log: testLog(t), MaxWorkers: 2, Version: "dev", AllowPrivateTargets: true}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(wctx, cfg) }()
	synced := func() []queries.RegistrySync {
		states, err := queries.RegistrySyncs(ctx, pool, reg.URL)
		require.NoError(t, err)
		return states
	}
	waitFor(t, "the leader's scheduled sync", func() bool {
		s := synced()
		return len(s) == 1 && s[0].FinishedAt != nil
	})
	stop()
	require.NoError(t, <-done)

	s := synced()[0]
	require.Equal(t, 1, s.Added)
	require.Equal(t, 0, s.Errors)
	require.Equal(t, int64(1), hits.Load(), "one sync per interval")
	var by string
	require.NoError(t, pool.QueryRow(ctx, "SELECT registry_name FROM servers WHERE slug = 'io-github-acme-weather'").Scan(&by))
	require.Equal(t, "io.github.acme/weather", by)
}
