package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

func TestAlertsPolicySetIsBoundedAndADryRunChangesNothing(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := runCLI(t, "--database-url", url, "alerts", "policy", "set")
	require.Equal(t, exit.Usage, res.Code, "no setting named")
	res = runCLI(t, "--database-url", url, "alerts", "policy", "set", "--down-after", "0")
	require.Equal(t, exit.Usage, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "--down-after: must be 1 to 100")
	res = runCLI(t, "--database-url", url, "alerts", "policy", "set", "--storm-share", "101")
	require.Equal(t, exit.Usage, res.Code)
	require.Contains(t, res.Stderr, "--storm-share")

	res = runCLI(t, "--database-url", url, "alerts", "policy", "set", "--down-after", "3", "--dry-run")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "dry run: nothing changed")
	res = runCLI(t, "--database-url", url, "alerts", "policy", "-o", "json")
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &p))
	require.EqualValues(t, 2, p["down_after"])

	res = runCLI(t, "--database-url", url, "alerts", "policy", "set", "--down-after", "3", "--resend-every", "30s")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = runCLI(t, "--database-url", url, "alerts", "policy", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &p))
	require.EqualValues(t, 3, p["down_after"])
	require.EqualValues(t, 30, p["resend_every_seconds"])
}

// A receiver's URL is printed redacted and its secret never; receivers test sends one signed event.
func TestReceiversAreListedRedactedAndTestedWithASignedEvent(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("thanks\x1b[2J"))
	}))
	t.Cleanup(srv.Close)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	file := filepath.Join(t.TempDir(), "oncall.secret")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))

	res := runCLI(t, "--database-url", url, "receivers", "add", "oncall", "--url", srv.URL+"/T000/B000/sekrit-path",
		"--format", "standard-webhooks", "--secret-file", file)
	require.Equal(t, 0, res.Code, res.Stderr)
	res = runCLI(t, "--database-url", url, "receivers", "add", "oncall", "--url", srv.URL, "--format", "slack")
	require.Equal(t, exit.Usage, res.Code, "a name taken")
	res = runCLI(t, "--database-url", url, "receivers", "add", "bad", "--url", srv.URL, "--format", "standard-webhooks")
	require.Equal(t, exit.Usage, res.Code)
	require.Contains(t, res.Stderr, "--secret-file")
	res = runCLI(t, "--database-url", url, "receivers", "add", "bad", "--url", srv.URL, "--format", "slack", "--events", "server.exploded")
	require.Equal(t, exit.Usage, res.Code)
	require.Contains(t, res.Stderr, "--events")

	for _, format := range []string{"table", "json"} {
		res = runCLI(t, "--database-url", url, "receivers", "list", "-o", format)
		require.Equal(t, 0, res.Code, res.Stderr)
		require.Contains(t, res.Stdout, "oncall")
		require.NotContains(t, res.Stdout, "sekrit-path")
		require.NotContains(t, res.Stdout, base64.StdEncoding.EncodeToString(key))
	}

	res = runCLI(t, "--database-url", url, "receivers", "test", "oncall")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "answered 202")
	require.NotContains(t, res.Stdout, "\x1b", "the receiver's answer is sanitised")
	require.True(t, strings.HasPrefix(got.Get("webhook-signature"), "v1,"))
	require.NotEmpty(t, got.Get("webhook-id"))

	res = runCLI(t, "--database-url", url, "receivers", "remove", "oncall")
	require.Equal(t, 0, res.Code, res.Stderr)
	res = runCLI(t, "--database-url", url, "receivers", "remove", "oncall")
	require.Equal(t, exit.Usage, res.Code)
}

func TestAlertsListAndDeliverOnAnEmptyOutbox(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	res := runCLI(t, "--database-url", url, "alerts", "list", "--open", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.JSONEq(t, "[]", res.Stdout)
	res = runCLI(t, "--database-url", url, "alerts", "deliver", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.JSONEq(t, `{"attempts":0,"delivered":0,"failed":0,"pending":0,"resent":0}`, res.Stdout)
	res = runCLI(t, "--database-url", url, "alerts", "list", "--limit", "0")
	require.Equal(t, exit.Usage, res.Code)
}

func TestStatusShowsTheOpenAlerts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, pool := migratedDB(t)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "receivers", "add", "chat", "--url", "http://127.0.0.1:1/hook",
		"--format", "slack").Code)
	srv := testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "weather"})
	var runs []string
	for range 2 {
		job := testfactory.Job(ctx, t, pool, &testfactory.JobOpts{ServerID: srv})
		now := time.Now().UTC()
		fr, err := queries.FinishTx(ctx, pool, queries.FinishParams{JobID: job, ServerID: srv, ClaimedNextCheckAt: now,
			Outcome: "failed", StartedAt: now, CheckFinishedAt: now, Requests: 1, Result: []byte(`{"outcome":"failed"}`)})
		require.NoError(t, err)
		runs = append(runs, fmt.Sprint(fr.RunID))
	}
	res := runCLI(t, "--database-url", url, "status")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "OPEN ALERTS")
	require.Regexp(t, `weather +\S+ +`+strings.Join(runs, ",")+` +chat pending \(0 attempts\)`, res.Stdout)
	require.Less(t, strings.Index(res.Stdout, "OPEN ALERTS"), strings.Index(res.Stdout, "as of "), "a section of the report")

	// -o json shows the same alert, with its runs and deliveries.
	res = runCLI(t, "--database-url", url, "status", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var rep struct {
		Alerts []struct {
			Server     string `json:"server"`
			Runs       []any  `json:"runs"`
			Deliveries []struct {
				Receiver string `json:"receiver"`
				State    string `json:"state"`
				Attempts int    `json:"attempts"`
			} `json:"deliveries"`
		} `json:"alerts"`
		AlertsTotal int `json:"alerts_total"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &rep))
	require.Equal(t, 1, rep.AlertsTotal)
	require.Len(t, rep.Alerts, 1)
	require.Equal(t, "weather", rep.Alerts[0].Server)
	require.Len(t, rep.Alerts[0].Runs, 2)
	require.Len(t, rep.Alerts[0].Deliveries, 1)
	require.Equal(t, "chat", rep.Alerts[0].Deliveries[0].Receiver)
	require.Equal(t, "pending", rep.Alerts[0].Deliveries[0].State)

	res = runCLI(t, "--database-url", url, "alerts", "list", "--open")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.Contains(t, res.Stdout, "server.down")
}

// status's text renders the report it is given, open alerts included: it reads nothing itself, so
// the text and -o json show the same alerts, from one snapshot.
func TestStatusTextRendersTheReportsOpenAlerts(t *testing.T) {
	t.Parallel()
	io, _, out, _ := testStreams()
	last := "the receiver answered 503 Service Unavailable\x1b[2J"
	rep := &status.Report{GeneratedAt: time.Date(2026, 10, 7, 21, 0, 0, 0, time.UTC), AlertsTotal: status.MaxOpenAlerts + 3}
	for i := range status.MaxOpenAlerts {
		rep.Alerts = append(rep.Alerts, status.OpenAlert{ID: fmt.Sprint(i), Type: "server.down", Server: fmt.Sprintf("site-%02d", i),
			State: "down", OpenedAt: rep.GeneratedAt.Add(-time.Hour), Runs: []int64{int64(2 * i), int64(2*i + 1)},
			Deliveries: []queries.EventDelivery{{EventID: fmt.Sprint(i), Receiver: "pager", State: "pending", Attempts: 2, LastError: &last}}})
	}
	require.NoError(t, writeStatus(io, render.StylesFor(io), rep))
	text := out.String()
	require.Contains(t, text, "OPEN ALERTS")
	require.Regexp(t, `site-07 +2026-10-07T20:00:00Z +14,15 +pager pending \(2 attempts, last: the receiver answered 503`, text)
	require.NotContains(t, text, "\x1b", "server text is sanitised")
	require.Contains(t, text, "... and 3 more: probectl alerts list --open")
}

// run round, with no worker anywhere, delivers its own round's events before it exits: here a
// server that answers 500 goes down at its first failed check (--down-after 1) and the receiver
// has the event when run round returns.
func TestRunRoundDeliversItsRoundsEventsBeforeItExits(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})).AddServers(t, pool, 1, "broken", testfactory.ServerOpts{})
	var (
		mu  sync.Mutex
		got []string
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, body.Text)
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "alerts", "policy", "set", "--down-after", "1").Code)
	require.Equal(t, 0, runCLI(t, "--database-url", url, "receivers", "add", "chat", "--url", rcv.URL, "--format", "slack").Code)

	res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets")
	require.Equal(t, 0, res.Code, res.Stderr)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"server broken-0 is down"}, got)
}

// deploy verify --alert makes a failed verdict an event, with the release and the failed checks.
func TestDeployVerifyWithAlertWritesAVerifyFailedEvent(t *testing.T) {
	t.Parallel()
	url := plantIncident(t)
	res := withDB(url).run(t, "deploy", "verify", "--alert")
	require.Equal(t, 1, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "verify.failed event")
	res = runCLI(t, "--database-url", url, "alerts", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	require.Len(t, got, 1)
	require.Equal(t, "verify.failed", got[0]["type"])
	details := got[0]["details"].(map[string]any)
	require.Contains(t, details["failed_checks"], "duplicates")
}

// With --read-database-url, deploy verify reads its report there, but the verify.failed event is a
// write and goes to the primary: on a read-only connection it would be refused and lost.
func TestDeployVerifyWithAlertWritesItsEventToThePrimaryWhenReadsGoElsewhere(t *testing.T) {
	t.Parallel()
	url := plantIncident(t)
	pool := dbtest.Pool(t, url)
	role := fmt.Sprintf("verify_reader_%d", time.Now().UnixNano())
	_, err := pool.Exec(t.Context(), fmt.Sprintf(`CREATE ROLE %s LOGIN; GRANT pg_read_all_data TO %s;
		ALTER ROLE %s SET default_transaction_read_only = on`, role, role, role))
	require.NoError(t, err)
	u, err := neturl.Parse(url)
	require.NoError(t, err)
	u.User = neturl.User(role)
	res := runCLI(t, "--database-url", url, "--read-database-url", u.String(), "deploy", "verify", "--alert")
	require.Equal(t, 1, res.Code, res.Stderr)
	require.Contains(t, res.Stderr, "verify.failed event")
	var events int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM alert_events WHERE type = 'verify.failed'`).Scan(&events))
	require.Equal(t, 1, events)
}
