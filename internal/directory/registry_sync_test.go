package directory_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// syncedServer is one server as the assertions read it back.
type syncedServer struct {
	ID           int64      `db:"id"`
	URL          string     `db:"endpoint_url"`
	Transport    *string    `db:"transport"`
	Status       string     `db:"status"`
	RegistryName *string    `db:"registry_name"`
	Deprecated   *time.Time `db:"registry_deprecated_at"`
}

func servers(t *testing.T, pool *pgxpool.Pool) map[string]syncedServer {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT slug, id, endpoint_url, transport, status, registry_name,
		registry_deprecated_at FROM servers`)
	require.NoError(t, err)
	type row struct {
		Slug string `db:"slug"`
		syncedServer
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
	require.NoError(t, err)
	out := map[string]syncedServer{}
	for _, r := range all {
		out[r.Slug] = r.syncedServer
	}
	return out
}

// statusChange is the latest recorded status change of a server.
type statusChange struct {
	To        string `db:"status_to"`
	Reason    string `db:"reason"`
	ChangedBy string `db:"changed_by"`
}

func lastStatusChange(t *testing.T, pool *pgxpool.Pool, slug string) statusChange {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT c.status_to, c.reason, c.changed_by
		FROM server_status_changes c JOIN servers s ON s.id = c.server_id WHERE s.slug = $1 ORDER BY c.id DESC LIMIT 1`, slug)
	require.NoError(t, err)
	c, err := pgx.CollectOneRow(rows, pgx.RowToStructByName[statusChange])
	require.NoError(t, err)
	return c
}

func syncOpts(reg *fakeRegistry) directory.SyncOptions {
	return directory.SyncOptions{RegistryURL: reg.srv.URL + "/", AllowPrivate: true, Actor: "sync-test"}
}

var (
	t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t0.Add(2 * time.Hour)
)

// The registry as the first sync finds it: three pages.
func firstState() [][]regEntry {
	return [][]regEntry{
		{
			{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, UpdatedAt: t0},
			{Name: "io.github.acme/two", Remotes: []string{"streamable-http https://two.example/mcp"}, UpdatedAt: t0},
			{Name: "io.github.acme/moving", Remotes: []string{"streamable-http https://old.moving.example/mcp"}, NotLatest: true, UpdatedAt: t0},
		},
		{
			{Name: "io.github.acme/moving", Remotes: []string{"streamable-http https://moving.example/mcp"}, UpdatedAt: t0},
			{Name: "io.github.acme/pkg"}, // packages only
			{Name: "io.github.acme/aging", Remotes: []string{"streamable-http https://aging.example/mcp"}, UpdatedAt: t0},
		},
		{
			{Name: "io.github.acme/gone", Remotes: []string{"streamable-http https://gone.example/mcp"}, UpdatedAt: t1},
			{Name: "io.github.acme/dual", Remotes: []string{"streamable-http https://dual.example/mcp", "sse https://dual.example/sse"}, UpdatedAt: t0},
		},
	}
}

func TestSyncFollowsTheRegistryAcrossPagesThenMirrorsWhatItAddsChangesDeprecatesAndDeletes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	hand := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "by-hand", Kind: "mcp"})
	reg := newFakeRegistry(t)
	reg.set(firstState()...)

	res, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	require.Equal(t, 3, res.Pages)
	require.True(t, res.Full, "the first sync of a registry reads everything")
	require.Equal(t, 7, res.Added, "one, two, moving, aging, gone, and dual's two remotes")
	require.Equal(t, directory.RegistrySkipped{OlderVersion: 1, PackagesOnly: 1}, res.Skipped)
	require.Equal(t, t1, *res.NewestUpdatedAt)
	reqs := reg.takeRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, []string{"", "p2", "p3"}, []string{reqs[0].Get("cursor"), reqs[1].Get("cursor"), reqs[2].Get("cursor")})
	for _, q := range reqs {
		require.Equal(t, "100", q.Get("limit"))
		require.False(t, q.Has("updated_since"), "a first sync is full")
	}
	before := servers(t, pool)
	require.Equal(t, "https://moving.example/mcp", before["io-github-acme-moving"].URL, "the latest version's remote")
	require.Equal(t, "io.github.acme/dual", *before["io-github-acme-dual-sse"].RegistryName)

	// The second state, the whole registry: the fake serves only what changed after updated_since
	// (one and two did not), so what the incremental sync reads is the registry's filtering.
	reg.set(
		[]regEntry{
			{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, UpdatedAt: t0},
			{Name: "io.github.acme/two", Remotes: []string{"streamable-http https://two.example/mcp"}, UpdatedAt: t0},
			{Name: "io.github.acme/new", Remotes: []string{"sse https://new.example/sse"}, UpdatedAt: t2},
			{Name: "io.github.acme/moving", Remotes: []string{"streamable-http https://old.moving.example/mcp"}, NotLatest: true, UpdatedAt: t0},
			{Name: "io.github.acme/moving", Remotes: []string{"streamable-http https://moved.example/mcp"}, UpdatedAt: t2},
			{Name: "io.github.acme/pkg"},
		},
		[]regEntry{
			{Name: "io.github.acme/aging", Remotes: []string{"streamable-http https://aging.example/mcp"}, Status: "deprecated", UpdatedAt: t2},
			{Name: "io.github.acme/gone", Remotes: []string{"streamable-http https://gone.example/mcp"}, Status: "deleted", UpdatedAt: t2},
			{Name: "io.github.acme/dual", Remotes: []string{"streamable-http https://dual.example/mcp"}, UpdatedAt: t2},
		},
	)
	res, err = directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	require.False(t, res.Full)
	require.Equal(t, t1, *res.UpdatedSince)
	require.Equal(t, 5, res.Entries, "only the entries changed after t1")
	for _, q := range reg.takeRequests() {
		require.Equal(t, t1.Format(time.RFC3339Nano), q.Get("updated_since"), "incremental: from the newest updatedAt seen")
	}
	require.Equal(t, 1, res.Added, "new")
	require.Equal(t, 2, res.Updated, "moving moved, aging deprecated")
	require.Equal(t, 2, res.Delisted, "gone deleted, dual's sse remote removed")
	require.Equal(t, 1, res.Unchanged, "dual's streamable-http remote")

	after := servers(t, pool)
	require.Equal(t, before["io-github-acme-moving"].ID, after["io-github-acme-moving"].ID, "a moved remote keeps its server and history")
	require.Equal(t, "https://moved.example/mcp", after["io-github-acme-moving"].URL)
	require.NotNil(t, after["io-github-acme-aging"].Deprecated)
	require.Equal(t, "active", after["io-github-acme-aging"].Status, "deprecated is kept and checked")
	require.Equal(t, "delisted", after["io-github-acme-gone"].Status)
	require.Equal(t, statusChange{To: "delisted", Reason: "registry: deleted", ChangedBy: "sync-test"},
		lastStatusChange(t, pool, "io-github-acme-gone"))
	require.Equal(t, "delisted", after["io-github-acme-dual-sse"].Status)
	require.Equal(t, "registry: remote removed", lastStatusChange(t, pool, "io-github-acme-dual-sse").Reason)
	require.Equal(t, "active", after["io-github-acme-two"].Status, "an entry an incremental sync did not read stays")
	require.Equal(t, "active", after["io-github-acme-one"].Status)
	require.Equal(t, before["by-hand"], after["by-hand"], "a server added by hand is never touched")
	require.Equal(t, hand, after["by-hand"].ID)

	// An operator delists one; a sync that lists it again leaves it delisted.
	_, err = directory.SetStatus(ctx, pool, "io-github-acme-one", "delisted", "abuse report", "oncall", nil)
	require.NoError(t, err)

	// A full sync that no longer lists two: delisted; gone is listed again: listed again.
	reg.set([]regEntry{
		{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, UpdatedAt: t0},
		{Name: "io.github.acme/gone", Remotes: []string{"streamable-http https://gone.example/mcp"}, UpdatedAt: t2},
	})
	res, err = directory.Sync(ctx, pool, directory.SyncOptions{RegistryURL: reg.srv.URL, Full: true, AllowPrivate: true, Actor: "sync-test"})
	require.NoError(t, err)
	for _, q := range reg.takeRequests() {
		require.False(t, q.Has("updated_since"), "--full reads everything")
	}
	final := servers(t, pool)
	for _, slug := range []string{"io-github-acme-two", "io-github-acme-new", "io-github-acme-moving", "io-github-acme-dual"} {
		require.Equal(t, "delisted", final[slug].Status, slug)
		require.Equal(t, "registry: deleted", lastStatusChange(t, pool, slug).Reason, slug)
	}
	require.Equal(t, "active", final["io-github-acme-gone"].Status)
	require.Equal(t, "registry: listed again", lastStatusChange(t, pool, "io-github-acme-gone").Reason)
	require.Equal(t, "active", final["by-hand"].Status, "a full sync never delists a server added by hand")
	require.Equal(t, "delisted", final["io-github-acme-one"].Status, "an operator's delisting stands")
	require.Equal(t, "abuse report", lastStatusChange(t, pool, "io-github-acme-one").Reason)

	states, err := directory.SyncStatus(ctx, pool, "")
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.Equal(t, reg.srv.URL, states[0].RegistryURL, "one registry, however its URL was spelled")
	require.True(t, states[0].FullSync)
	require.Equal(t, 0, states[0].Errors)
}

// syncFails runs a sync that must fail with exit code code and an error containing want, and checks
// that it applied nothing: the directory is as before, and the failure is recorded.
func syncFails(t *testing.T, pool *pgxpool.Pool, reg *fakeRegistry, code int, want string) {
	t.Helper()
	ctx := t.Context()
	before := servers(t, pool)
	_, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.Error(t, err)
	require.Contains(t, err.Error(), want)
	require.Equal(t, code, exit.Code(err), err.Error())
	require.Equal(t, before, servers(t, pool), "nothing applied")
	states, err := directory.SyncStatus(ctx, pool, reg.srv.URL)
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.GreaterOrEqual(t, states[0].Errors, 1)
	require.Contains(t, *states[0].LastError, want)
}

func TestASyncThatCannotUseAPageAppliesNothingAndNamesThePage(t *testing.T) {
	t.Parallel()
	page1 := []regEntry{{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}}}
	for _, tc := range []struct {
		name   string
		serve  func(*fakeRegistry)
		code   int
		reason string
	}{
		{"a page that is not JSON", func(r *fakeRegistry) {
			r.setRaw("p2", 200, "<html>maintenance</html>")
		}, exit.Found, "registry page 2 ("},
		{"a page without a servers list", func(r *fakeRegistry) {
			r.setRaw("p2", 200, `{"metadata":{}}`)
		}, exit.Found, `registry page 2 (`},
		{"a page answered with 503", func(r *fakeRegistry) {
			r.setRaw("p2", 503, `{"error":"down"}`)
		}, exit.Found, "HTTP 503 Service Unavailable"},
		{"a page answered with 404", func(r *fakeRegistry) {
			r.setRaw("p2", 404, `{}`)
		}, exit.Found, "registry page 2 ("},
		{"a cursor that points back at itself", func(r *fakeRegistry) {
			r.setRaw("p2", 200, listBody(page1, "p2"))
		}, exit.Found, `next cursor "p2" was already followed`},
		{"a cursor loop over two pages", func(r *fakeRegistry) {
			r.setRaw("p2", 200, listBody(page1, "p3"))
			r.setRaw("p3", 200, listBody(page1, "p2"))
		}, exit.Found, `registry page 3 (`},
		{"a page that redirects forever", func(r *fakeRegistry) {
			r.setRaw("p2", http.StatusFound, "")
			r.redirectForever()
		}, exit.Found, "more than 3 redirects"},
		{"an entry whose remote is ftp", func(r *fakeRegistry) {
			r.setRaw("p2", 200, listBody([]regEntry{{Name: "io.github.evil/ftp", Remotes: []string{"streamable-http ftp://files.example/"}}}, ""))
		}, exit.Found, `page 2 entry 0 ("io.github.evil/ftp"): remotes[0]: url "ftp://files.example/": scheme must be http or https`},
		{"an entry with more than 16 remotes", func(r *fakeRegistry) {
			remotes := make([]string, directory.MaxRegistryRemotes+1)
			for i := range remotes {
				remotes[i] = "sse https://r" + itoa(i) + ".example/sse"
			}
			r.setRaw("p2", 200, listBody([]regEntry{{Name: "io.github.evil/many", Remotes: remotes}}, ""))
		}, exit.Found, `registry page 2 (` + "%s" + `): entry 0 ("io.github.evil/many"): 17 remotes, more than the 16 an entry may have`},
		{"two registry names for one slug", func(r *fakeRegistry) {
			r.setRaw("p2", 200, listBody([]regEntry{{Name: "io.github.acme-weather/x", Remotes: []string{"sse https://attacker.example/sse"}}}, ""))
		}, exit.Found, `registry name "io.github.acme-weather/x" maps to the server of registry name "io.github.acme/weather-x" (page 1 entry 1)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := dbtest.Pool(t, migrated.NewDB(t))
			reg := newFakeRegistry(t)
			reg.setRaw("", 200, listBody(append(page1,
				regEntry{Name: "io.github.acme/weather-x", Remotes: []string{"sse https://weather.example/sse"}}), "p2"))
			tc.serve(reg)
			if strings.Contains(tc.reason, "%s") {
				tc.reason = fmt.Sprintf(tc.reason, reg.srv.URL+"/v0/servers?cursor=p2&limit=100")
			}
			syncFails(t, pool, reg, tc.code, tc.reason)
			require.Empty(t, servers(t, pool), "not even page 1's servers")
		})
	}
}

func TestASyncNeverTakesOverAServerOfAnotherRegistryName(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	reg.set([]regEntry{{Name: "io.github.acme/weather-x", Remotes: []string{"sse https://weather.example/sse"}, UpdatedAt: t0}})
	_, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)

	reg.set([]regEntry{
		{Name: "io.github.acme/new", Remotes: []string{"sse https://new.example/sse"}, UpdatedAt: t1},
		{Name: "io.github.acme-weather/x", Remotes: []string{"sse https://attacker.example/sse"}, UpdatedAt: t1},
	})
	syncFails(t, pool, reg, exit.Found, `slug "io-github-acme-weather-x": registry name "io.github.acme-weather/x" maps to the server of registry name "io.github.acme/weather-x"`)
	got := servers(t, pool)
	require.Equal(t, "https://weather.example/sse", got["io-github-acme-weather-x"].URL)
	require.NotContains(t, got, "io-github-acme-new", "nothing of the refused sync applied")
}

func TestASyncBoundsWhatTheRegistryServes(t *testing.T) {
	t.Parallel()
	t.Run("a response over 10 MiB", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.Pool(t, migrated.NewDB(t))
		reg := newFakeRegistry(t)
		reg.setRaw("", 200, `{"servers":[],"metadata":{"x":"`+strings.Repeat("a", directory.MaxRegistryPageBytes)+`"}}`)
		syncFails(t, pool, reg, exit.Found, "registry page 1 (")
		syncFails(t, pool, reg, exit.Found, "response larger than 10 MiB")
	})
	t.Run("more than 64 MiB in one sync", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.Pool(t, migrated.NewDB(t))
		reg := newFakeRegistry(t)
		pad := strings.Repeat("a", directory.MaxRegistryPageBytes-(1<<20))
		for i := 0; i < 8; i++ {
			cursor := ""
			if i > 0 {
				cursor = "c" + itoa(i)
			}
			reg.setRaw(cursor, 200, `{"servers":[],"metadata":{"x":"`+pad+`","nextCursor":"c`+itoa(i+1)+`"}}`)
		}
		syncFails(t, pool, reg, exit.Found, "registry page 8 (")
		syncFails(t, pool, reg, exit.Found, "more than 64 MiB read in one sync")
	})
	t.Run("more than 1,000 pages", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.Pool(t, migrated.NewDB(t))
		reg := newFakeRegistry(t)
		for i := 0; i <= directory.MaxRegistryPages; i++ {
			cursor := ""
			if i > 0 {
				cursor = "c" + itoa(i)
			}
			reg.setRaw(cursor, 200, listBody(nil, "c"+itoa(i+1)))
		}
		syncFails(t, pool, reg, exit.Found, "more than 1000 pages")
		require.Equal(t, directory.MaxRegistryPages, len(reg.takeRequests()), "1,000 pages read, not one more")
	})
	t.Run("more than 100,000 entries", func(t *testing.T) {
		t.Parallel()
		pool := dbtest.Pool(t, migrated.NewDB(t))
		reg := newFakeRegistry(t)
		page := make([]regEntry, 20_000)
		for i := range page {
			page[i] = regEntry{Name: "n/" + itoa(i)}
		}
		body := listBody(page, "")
		for i := 0; i < 6; i++ {
			next := ""
			if i < 5 {
				next = "c" + itoa(i+1)
			}
			cursor := ""
			if i > 0 {
				cursor = "c" + itoa(i)
			}
			reg.setRaw(cursor, 200, strings.Replace(body, `"metadata":{"count":20000}`, `"metadata":{"count":20000,"nextCursor":"`+next+`"}`, 1))
		}
		syncFails(t, pool, reg, exit.Found, "registry page 6 (")
		syncFails(t, pool, reg, exit.Found, "more than 100000 entries")
	})
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestASyncReachesAPrivateRegistryOnlyWhenAllowed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	reg.set([]regEntry{{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}}})
	o := syncOpts(reg)
	o.AllowPrivate = false
	_, err := directory.Sync(ctx, pool, o)
	require.Error(t, err)
	var page *directory.PageError
	require.True(t, errors.As(err, &page), err.Error())
	require.Contains(t, err.Error(), "127.0.0.1 is a loopback address; private targets are not allowed")
	require.Equal(t, exit.Usage, exit.Code(err))
	require.Empty(t, reg.takeRequests(), "refused before a connection was made")
	require.Empty(t, servers(t, pool))
	// Bad input changes nothing: no sync state is recorded for a registry the sync was not let reach
	// (it stayed in `servers sync --status` as a failed sync of that URL).
	var syncs int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM registry_syncs").Scan(&syncs))
	require.Zero(t, syncs)
}

func TestADrySyncChangesNothingAndRecordsNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	reg.set(firstState()...)
	o := syncOpts(reg)
	o.DryRun = true
	res, err := directory.Sync(ctx, pool, o)
	require.NoError(t, err)
	require.True(t, res.DryRun)
	require.Equal(t, 7, res.Added)
	require.Len(t, res.Changes, 7)
	require.Empty(t, servers(t, pool))
	states, err := queries.RegistrySyncs(ctx, pool, "")
	require.NoError(t, err)
	require.Empty(t, states, "a dry run records no sync state")
}

// A scheduled registry is taken by one worker's job at a time: the claim moves its start, so a
// second job (another worker's leader after a failover) finds nothing due until the interval has
// passed; the sync then runs incrementally on the schedule.
func TestAScheduledRegistryIsSyncedOncePerInterval(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	reg.set(firstState()...)
	_, err := directory.ScheduleSync(ctx, pool, reg.srv.URL, time.Hour, "test", nil)
	require.NoError(t, err)

	due, err := directory.HasDueSync(ctx, pool)
	require.NoError(t, err)
	require.True(t, due, "a schedule never synced is due")
	claimed, ok, err := queries.ClaimDueRegistrySync(ctx, pool, nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, reg.srv.URL, claimed.RegistryURL)
	_, ok, err = queries.ClaimDueRegistrySync(ctx, pool, nil)
	require.NoError(t, err)
	require.False(t, ok, "claimed: not due for another job")

	// An hour later it is due again, and the worker's function syncs it.
	later := time.Now().Add(time.Hour + time.Minute)
	_, ok, err = queries.ClaimDueRegistrySync(ctx, pool, &later)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = pool.Exec(ctx, "UPDATE registry_syncs SET started_at = NULL")
	require.NoError(t, err)
	res, ok, err := directory.SyncNextDue(ctx, pool, true, "probectl worker test")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 7, res.Added)
	_, ok, err = directory.SyncNextDue(ctx, pool, true, "probectl worker test")
	require.NoError(t, err)
	require.False(t, ok, "synced: not due for an hour")
	require.Len(t, reg.takeRequests(), 3, "one sync of three pages")

	_, err = directory.ScheduleSync(ctx, pool, reg.srv.URL, time.Minute, "test", nil)
	var every *directory.SyncEveryError
	require.ErrorAs(t, err, &every, "below the 5-minute bound")
	_, err = directory.ScheduleSync(ctx, pool, reg.srv.URL, 0, "test", nil)
	require.NoError(t, err)
	due, err = directory.HasDueSync(ctx, pool)
	require.NoError(t, err)
	require.False(t, due, "no schedule: never due")
}

// A server is the registry's whose sync added it: a second registry listing the same name never
// updates it (not its URL, not its registry), never delists it when its copy of the entry is
// deleted, and a file import never changes it either.
func TestASyncNeverChangesAServerAnotherRegistryOwns(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	regA, regB := newFakeRegistry(t), newFakeRegistry(t)
	regA.set([]regEntry{{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, UpdatedAt: t0}})
	_, err := directory.Sync(ctx, pool, syncOpts(regA))
	require.NoError(t, err)
	ownedBy := func() string {
		var u string
		require.NoError(t, pool.QueryRow(ctx, "SELECT registry_url FROM servers WHERE slug = 'io-github-acme-one'").Scan(&u))
		return u
	}
	require.Equal(t, regA.srv.URL, ownedBy())

	regB.set([]regEntry{{Name: "io.github.acme/one", Remotes: []string{"sse https://attacker.example/sse"}, UpdatedAt: t1}})
	syncFails(t, pool, regB, exit.Found, `registry name "io.github.acme/one" is synced from registry `+regA.srv.URL+`, not `+regB.srv.URL)
	require.Equal(t, "https://one.example/sse", servers(t, pool)["io-github-acme-one"].URL)
	require.Equal(t, regA.srv.URL, ownedBy())

	regB.set([]regEntry{{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, Status: "deleted", UpdatedAt: t1}})
	res, err := directory.Sync(ctx, pool, directory.SyncOptions{RegistryURL: regB.srv.URL, Full: true, AllowPrivate: true, Actor: "b"})
	require.NoError(t, err)
	require.Zero(t, res.Delisted)
	require.Equal(t, "active", servers(t, pool)["io-github-acme-one"].Status, "registry B's deletion is not A's")

	rows := []directory.RegistryRow{{Row: directory.Row{Entry: directory.Entry{Slug: "io-github-acme-one",
		URL: "https://file.example/sse", Kind: "mcp", Plan: "standard", Transport: "sse"}}, Name: "io.github.acme/one"}}
	_, err = directory.ImportRegistry(ctx, pool, rows, "file", nil, false)
	var collision *directory.CollisionError
	require.ErrorAs(t, err, &collision)
	require.Contains(t, err.Error(), "a file import never changes a server a registry sync owns")
	require.Equal(t, "https://one.example/sse", servers(t, pool)["io-github-acme-one"].URL)

	// A file import's server (no registry) is adopted by the first sync that lists its name.
	rows[0].Slug, rows[0].Name = "io-github-acme-filed", "io.github.acme/filed"
	_, err = directory.ImportRegistry(ctx, pool, rows, "file", nil, false)
	require.NoError(t, err)
	regB.set([]regEntry{{Name: "io.github.acme/filed", Remotes: []string{"sse https://filed.example/sse"}, UpdatedAt: t2}})
	res, err = directory.Sync(ctx, pool, syncOpts(regB))
	require.NoError(t, err)
	require.Equal(t, 1, res.Updated)
	require.Equal(t, "https://filed.example/sse", servers(t, pool)["io-github-acme-filed"].URL)
}

// An entry the registry dates in the future does not move where the next incremental sync starts
// past now: the stored newest updatedAt is capped at the sync's start on the database's clock, and
// a future value already stored (by an earlier binary) is capped by the next sync.
func TestAFutureUpdatedAtDoesNotStopIncrementalSyncs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	future := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.set([]regEntry{
		{Name: "io.github.acme/one", Remotes: []string{"sse https://one.example/sse"}, UpdatedAt: t0},
		{Name: "io.github.acme/clock", Remotes: []string{"sse https://clock.example/sse"}, UpdatedAt: future},
	})
	var dbNow time.Time
	require.NoError(t, pool.QueryRow(ctx, "SELECT now()").Scan(&dbNow))
	res, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	require.True(t, res.NewestUpdatedAt.Before(future), "capped at the sync's start: %s", res.NewestUpdatedAt)
	stored := func() time.Time {
		states, err := queries.RegistrySyncs(ctx, pool, reg.srv.URL)
		require.NoError(t, err)
		require.Len(t, states, 1)
		return *states[0].NewestUpdatedAt
	}
	require.WithinDuration(t, dbNow, stored(), time.Minute)

	_, err = pool.Exec(ctx, "UPDATE registry_syncs SET newest_updated_at = $1", future.AddDate(100, 0, 0))
	require.NoError(t, err)
	reg.takeRequests()
	_, err = directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	require.WithinDuration(t, dbNow, stored(), time.Minute, "greatest() keeps no future value")
	reg.takeRequests()
	_, err = directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	for _, q := range reg.takeRequests() {
		since, err := time.Parse(time.RFC3339Nano, q.Get("updated_since"))
		require.NoError(t, err)
		require.WithinDuration(t, dbNow, since, time.Minute)
	}
}

// A sync that saw no updatedAt stores none: the next sync reads everything again rather than
// starting at the time of the sync (capping the stored value must not invent one).
func TestASyncThatSawNoUpdatedAtLeavesTheNextOneFull(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	reg.setRaw("", 200, `{"servers":[],"metadata":{}}`)
	for range 2 {
		res, err := directory.Sync(ctx, pool, syncOpts(reg))
		require.NoError(t, err)
		require.True(t, res.Full)
		require.Nil(t, res.UpdatedSince)
	}
}

// A sync asks for pages of 100 and follows the cursors: a registry whose own pages are larger
// serves 100 a page (the fake honours limit as the registry does).
func TestASyncReadsPagesOfTheLimitItAsks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	entries := make([]regEntry, 250)
	for i := range entries {
		entries[i] = regEntry{Name: "io.github.acme/s" + itoa(i), Remotes: []string{"sse https://s" + itoa(i) + ".example/sse"}}
	}
	reg.set(entries)
	res, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	require.Equal(t, 3, res.Pages)
	require.Equal(t, 250, res.Added)
}

// An operator's status stands against the registry: a paused server whose entry is deleted and
// then listed again is still paused, and a server the operator delisted after a sync had delisted
// it is not listed again by the next sync.
func TestAnOperatorsPauseOrDelistingOutlastsTheRegistry(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	listed := func(status string, at time.Time) {
		reg.set([]regEntry{
			{Name: "io.github.acme/paused", Remotes: []string{"sse https://paused.example/sse"}, Status: status, UpdatedAt: at},
			{Name: "io.github.acme/banned", Remotes: []string{"sse https://banned.example/sse"}, Status: status, UpdatedAt: at},
		})
	}
	sync := func() {
		_, err := directory.Sync(ctx, pool, syncOpts(reg))
		require.NoError(t, err)
	}
	listed("", t0)
	sync()
	_, err := directory.SetStatus(ctx, pool, "io-github-acme-paused", "paused", "flaky, investigating", "oncall", nil)
	require.NoError(t, err)

	listed("deleted", t1)
	sync()
	got := servers(t, pool)
	require.Equal(t, "paused", got["io-github-acme-paused"].Status, "a paused server is left paused")
	require.Equal(t, "delisted", got["io-github-acme-banned"].Status)
	c, err := directory.SetStatus(ctx, pool, "io-github-acme-banned", "delisted", "abuse report", "oncall", nil)
	require.NoError(t, err)
	require.True(t, c.Changed, "delisted by the sync: now the operator's, recorded")
	require.Equal(t, statusChange{To: "delisted", Reason: "abuse report", ChangedBy: "oncall"}, lastStatusChange(t, pool, "io-github-acme-banned"))
	c, err = directory.SetStatus(ctx, pool, "io-github-acme-banned", "delisted", "again", "oncall", nil)
	require.NoError(t, err)
	require.False(t, c.Changed, "the operator's already: nothing recorded")

	listed("", t2)
	sync()
	got = servers(t, pool)
	require.Equal(t, "paused", got["io-github-acme-paused"].Status, "the operator's pause is not lost")
	require.Equal(t, "flaky, investigating", lastStatusChange(t, pool, "io-github-acme-paused").Reason)
	require.Equal(t, "delisted", got["io-github-acme-banned"].Status, "the operator's delisting stands")
}

// A registry that serves a short listing does not empty the directory: a sync that would delist
// more than 10 servers and more than 10% of the registry's is refused, applying nothing and
// recording the error, unless the operator allows it; an empty full listing is always refused.
func TestASyncRefusesToDelistMoreThanItsBound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.Pool(t, migrated.NewDB(t))
	reg := newFakeRegistry(t)
	var all []regEntry
	for i := range 20 {
		all = append(all, regEntry{Name: "io.github.acme/s" + itoa(i), Remotes: []string{"sse https://s" + itoa(i) + ".example/sse"}, UpdatedAt: t0})
	}
	reg.set(all)
	_, err := directory.Sync(ctx, pool, syncOpts(reg))
	require.NoError(t, err)
	full := syncOpts(reg)
	full.Full = true
	refused := func(o directory.SyncOptions, want string) {
		t.Helper()
		before := servers(t, pool)
		_, err := directory.Sync(ctx, pool, o)
		var mass *directory.MassDelistError
		require.ErrorAs(t, err, &mass)
		require.Equal(t, exit.Found, exit.Code(err))
		require.Contains(t, err.Error(), want)
		require.Equal(t, before, servers(t, pool), "nothing applied")
		if !o.DryRun {
			states, err := directory.SyncStatus(ctx, pool, reg.srv.URL)
			require.NoError(t, err)
			require.Contains(t, *states[0].LastError, want, "recorded for --status")
		}
	}

	// Delisting 10 (the bound, not more) goes through.
	reg.set(all[:10])
	res, err := directory.Sync(ctx, pool, full)
	require.NoError(t, err)
	require.Equal(t, 10, res.Delisted)

	// 10 left listed; relist them all (10 more) and 5 others: then a listing of 4 would delist 11.
	reg.set(all)
	_, err = directory.Sync(ctx, pool, full)
	require.NoError(t, err)
	reg.set(all[:9])
	refused(full, "would delist 11 of the 20 servers listed from "+reg.srv.URL+", more than 10 and more than 10%")
	dry := full
	dry.DryRun = true
	refused(dry, "would delist 11 of the 20")

	allow := full
	allow.AllowMassDelist = true
	res, err = directory.Sync(ctx, pool, allow)
	require.NoError(t, err)
	require.Equal(t, 11, res.Delisted)

	reg.set()
	reg.setRaw("", 200, `{"servers":[],"metadata":{}}`)
	refused(allow, "the full listing of "+reg.srv.URL+" has no entry while 9 of its servers are listed")
}

// A registry that redirects a page to an address the SSRF guard refuses (a metadata or
// link-local one, refused even with private targets allowed) is the registry's doing: exit 1
// naming the page, not 2, and nothing is dialled there. The registry client dials through
// probe/check's guard, which this package cannot replace with a recording dialer, so the test
// runs in a network namespace of its own where both targets are decoys on loopback: had the
// guard followed the redirect, it would have reached a decoy, never the real address.
func TestARedirectToARefusedAddressIsTheRegistrysFault(t *testing.T) {
	t.Parallel()
	ns := fakefleet.Namespace{Decoys: []string{"169.254.169.254:80", "169.254.10.1:80"}, Database: true}
	fakefleet.InNetworkNamespace(t, ns, func(t *testing.T, decoys *fakefleet.Decoys) {
		ctx := t.Context()
		pool := dbtest.Pool(t, migrated.NewDB(t))
		for _, target := range []string{"http://169.254.169.254/latest/meta-data/", "http://169.254.10.1/v0/servers"} {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusFound)
			}))
			t.Cleanup(srv.Close)
			_, err := directory.Sync(ctx, pool, directory.SyncOptions{RegistryURL: srv.URL, AllowPrivate: true, Actor: "t"})
			var page *directory.PageError
			require.ErrorAs(t, err, &page)
			require.Equal(t, 1, page.Page)
			require.Equal(t, exit.Found, exit.Code(err), err.Error())
			require.Contains(t, err.Error(), "redirected to a refused address")
		}
		require.Zero(t, decoys.Connections(t), "nothing was sent to the refused addresses")
	})
}
