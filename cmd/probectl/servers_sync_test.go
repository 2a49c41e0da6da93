package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

// registryOnLoopback serves body as every page of a one-page registry listing, counting requests.
func registryOnLoopback(t *testing.T, body *atomic.Pointer[string]) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/v0/servers" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(*body.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func registryList(names ...string) string {
	var entries []string
	for _, n := range names {
		slug := strings.NewReplacer("/", "-", ".", "-").Replace(n)
		entries = append(entries, fmt.Sprintf(`{"server":{"name":%q,"remotes":[{"type":"sse","url":"https://%s.example/sse"}]},
			"_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","isLatest":true,"updatedAt":"2026-02-01T00:00:00Z"}}}`, n, slug))
	}
	return `{"servers":[` + strings.Join(entries, ",") + `],"metadata":{"count":` + fmt.Sprint(len(names)) + `}}`
}

func TestServersSyncPrintsCountsAndTheFirstTenChanges(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	var body atomic.Pointer[string]
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("io.github.acme/s%02d", i)
	}
	list := registryList(names...)
	body.Store(&list)
	reg, _ := registryOnLoopback(t, &body)

	res := runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets", "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "would sync (dry run, nothing changed) "+reg.URL+": full, 1 page, 12 entries")
	require.Equal(t, 0, countServers(t, url))

	res = runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "ADDED  UPDATED  DELISTED  UNCHANGED\n12     0        0         0")
	require.Contains(t, res.Stdout, "added   io-github-acme-s09  io.github.acme/s09")
	require.NotContains(t, res.Stdout, "io-github-acme-s10", "the table lists the first 10 changes")
	require.Contains(t, res.Stdout, "... and 2 more change(s); -o json lists them all")
	require.Equal(t, 12, countServers(t, url))

	list = registryList(names[1:]...)
	body.Store(&list)
	res = runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets", "--full", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Full      bool `json:"full"`
		Delisted  int  `json:"delisted"`
		Unchanged int  `json:"unchanged"`
		Changes   []struct {
			Slug, Change, To string
		} `json:"changes"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	require.True(t, got.Full)
	require.Equal(t, 1, got.Delisted)
	require.Equal(t, 11, got.Unchanged)
	require.Len(t, got.Changes, 1)
	require.Equal(t, "io-github-acme-s00", got.Changes[0].Slug)
	require.Equal(t, "registry: deleted", got.Changes[0].To)

	res = runCLI(t, "--database-url", url, "servers", "sync", "--status")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, reg.URL)
	require.Contains(t, res.Stdout, "LAST ERROR")
}

func TestServersSyncExitCodes(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	var body atomic.Pointer[string]
	notJSON := "<html>"
	body.Store(&notJSON)
	reg, hits := registryOnLoopback(t, &body)

	res := runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets")
	require.Equal(t, 1, res.Code, "a page that is not JSON is a problem found")
	require.Contains(t, res.Stderr, "registry page 1 ("+reg.URL+"/v0/servers?limit=100): not the registry's list response")

	res = runCLI(t, "--database-url", url, "servers", "sync", "--status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"errors": 1`)

	before := hits.Load()
	res = runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL)
	require.Equal(t, 2, res.Code, "a loopback registry without --allow-private-targets")
	require.Contains(t, res.Stderr, "loopback address")
	require.Contains(t, res.Stderr, "--allow-private-targets")
	require.Equal(t, before, hits.Load(), "refused before a connection")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"servers", "sync"}, "--registry: required"},
		{[]string{"servers", "sync", "--registry", "ftp://registry.example"}, "--registry: registry URL"},
		{[]string{"servers", "sync", "--registry", "https://registry.example", "--every", "1m"}, "--every: must be 5m to 7d (0 removes the schedule), got 1m"},
		{[]string{"servers", "sync", "--status", "--full"}, "--status"},
	} {
		res := runCLI(t, append([]string{"--database-url", url}, tc.args...)...)
		require.Equal(t, 2, res.Code, "%v: %s", tc.args, res.Stderr)
		require.Contains(t, res.Stderr, tc.want)
	}

	res = runCLI(t, "--database-url", url, "servers", "sync", "--registry", "https://registry.example/", "--every", "1h")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "https://registry.example: probectl worker syncs it every 1h")
	res = runCLI(t, "--database-url", url, "servers", "sync", "--status", "--registry", "https://registry.example", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, `"every_seconds": 3600`)
}

func TestServersSyncRefusesAMassDelistUnlessAllowed(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	var body atomic.Pointer[string]
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("io.github.acme/s%02d", i)
	}
	list := registryList(names...)
	body.Store(&list)
	reg, _ := registryOnLoopback(t, &body)
	res := runCLI(t, "--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets")
	require.Equal(t, 0, res.Code, res.Stderr)

	short := registryList(names[0])
	body.Store(&short)
	args := []string{"--database-url", url, "servers", "sync", "--registry", reg.URL, "--allow-private-targets", "--full"}
	res = runCLI(t, args...)
	require.Equal(t, 1, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "would delist 11 of the 12 servers listed from "+reg.URL)
	require.Contains(t, res.Stderr, "--allow-mass-delist")
	require.Equal(t, 12, countListed(t, url))

	res = runCLI(t, append(args, "--allow-mass-delist")...)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Equal(t, 1, countListed(t, url))
}

func countListed(t *testing.T, url string) int {
	t.Helper()
	var n int
	require.NoError(t, dbtest.Pool(t, url).QueryRow(context.Background(), "SELECT count(*) FROM servers WHERE status <> 'delisted'").Scan(&n))
	return n
}
