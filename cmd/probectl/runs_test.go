package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// signedMixedRound adds servers "up-N" (answering 200) and "down-N" (404) on loopback, runs one
// signed round over them and returns the database URL, the pool and the signing key's file.
func signedMixedRound(t *testing.T, up, down int) (string, queries.DBTX, string) {
	t.Helper()
	url, pool := migratedDB(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/down") {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	add := func(prefix string, n int) {
		for i := range n {
			testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("%s-%d", prefix, i),
				URL: fmt.Sprintf("%s/%s/%d", srv.URL, prefix, i), NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
		}
	}
	add("up", up)
	add("down", down)
	key := filepath.Join(t.TempDir(), "probe.key")
	require.Equal(t, 0, runCLI(t, "--database-url", url, "keys", "generate", "--out", key).Code)
	res := runCLI(t, "--database-url", url, "run", "round", "--signing-key", key, "--allow-private-targets", "--fanout", "0",
		"--claim-limit", "50")
	require.Equal(t, 0, res.Code, res.Stderr)
	return url, pool, key
}

func TestRunsListJSONHasTheDocumentedShapeAndFilters(t *testing.T) {
	t.Parallel()
	url, _, _ := signedMixedRound(t, 2, 1)

	res := runCLI(t, "--database-url", url, "runs", "list", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &runs), res.Stdout)
	require.Len(t, runs, 3)
	for _, key := range []string{"id", "job_id", "round_id", "server", "kind", "outcome", "summary", "error", "requests",
		"started_at", "finished_at", "duration_seconds", "key_id", "probectl_fault", "round_degraded"} {
		assert.Contains(t, runs[0], key)
	}
	assert.Len(t, runs[0], 15, "a new key is a change of the documented shape")
	for i := 1; i < len(runs); i++ {
		// As times, not strings: RFC 3339 drops trailing zeros, so "…00.1383Z" sorts after
		// "…00.138347Z" as text though it is earlier.
		newer, err := time.Parse(time.RFC3339Nano, runs[i-1]["started_at"].(string))
		require.NoError(t, err)
		older, err := time.Parse(time.RFC3339Nano, runs[i]["started_at"].(string))
		require.NoError(t, err)
		assert.False(t, newer.Before(older), "newest first")
	}
	assert.NotNil(t, runs[0]["key_id"])

	res = runCLI(t, "--database-url", url, "runs", "list", "--round", "1", "--outcome", "failed,error", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &runs))
	require.Len(t, runs, 1)
	assert.Equal(t, "down-0", runs[0]["server"])
	assert.Equal(t, "failed", runs[0]["outcome"])
	assert.Contains(t, runs[0]["error"], "404")

	res = runCLI(t, "--database-url", url, "runs", "list", "--server", "up-1")
	require.Equal(t, 0, res.Code, res.Stderr)
	out := lines(res.Stdout)
	require.Len(t, out, 2, res.Stdout)
	assert.Equal(t, strings.Fields("ID SERVER OUTCOME STARTED (UTC) DURATION ROUND WHY"), strings.Fields(out[0]))
	assert.Equal(t, []string{"up-1", "ok"}, strings.Fields(out[1])[1:3])

	res = runCLI(t, "--database-url", url, "runs", "list", "--server", "nope")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, `--server "nope": no such server`)

	res = runCLI(t, "--database-url", url, "runs", "list", "--outcome", "ok", "-o", "csv")
	require.Equal(t, 0, res.Code, res.Stderr)
	out = lines(res.Stdout)
	require.Len(t, out, 3, res.Stdout)
	assert.Equal(t, strings.Join(runsCSVHeader, ","), out[0])
}

func TestRunsListRefusesBadFlagsBeforeConnecting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an outcome that runs do not have", []string{"--outcome", "ok,abandoned"}, `--outcome: "abandoned" is not an outcome`},
		{"a limit of zero", []string{"--limit", "0"}, "--limit: must be between 1 and 10000"},
		{"a limit past the bound", []string{"--limit", "10001"}, "--limit: must be between 1 and 10000"},
		{"a negative round", []string{"--round", "-1"}, "--round: must be a round id"},
		{"a since that is no time", []string{"--since", "yesterday"}, "--since:"},
		{"an output it does not have", []string{"-o", "yaml"}, `--output "yaml"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, append([]string{"--database-url", "postgres://nobody@127.0.0.1:1/none", "runs", "list"}, tc.args...)...)
			assert.Equal(t, 2, res.Code, res.Stderr)
			assert.Contains(t, res.Stderr, tc.want)
			assert.Empty(t, res.Stdout)
		})
	}
}

func TestRunsShowVerifiesTheEnvelopeAndSaysWhenItDoesNot(t *testing.T) {
	t.Parallel()
	url, pool, _ := signedMixedRound(t, 1, 1)
	var failedID int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id FROM run_facts WHERE outcome = 'failed'`).Scan(&failedID))

	res := runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(failedID), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, true, got["envelope_verified"])
	assert.Equal(t, "down-0", got["server"])
	result := got["result"].(map[string]any)
	assert.Equal(t, "failed", result["outcome"])
	reqs := result["requests"].([]any)
	require.NotEmpty(t, reqs)
	assert.Equal(t, 404.0, reqs[0].(map[string]any)["status"])

	res = runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(failedID))
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "verified against the registered keys")
	assert.Contains(t, res.Stdout, "HTTP 404")
	assert.Contains(t, res.Stdout, "METHOD")

	// The stored result is changed after signing: the envelope still verifies, but it is the
	// envelope's statement that is signed; a moved envelope (another job's) does not.
	_, err := pool.Exec(t.Context(), `UPDATE probe_runs SET envelope = (SELECT envelope FROM probe_runs WHERE id <> $1 LIMIT 1) WHERE id = $1`, failedID)
	require.NoError(t, err)
	res = runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(failedID), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Equal(t, false, got["envelope_verified"])
	assert.Contains(t, got["envelope_error"], "another server")

	_, err = pool.Exec(t.Context(), `UPDATE probe_runs SET envelope = NULL WHERE id = $1`, failedID)
	require.NoError(t, err)
	res = runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(failedID), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Nil(t, got["envelope_verified"])
	assert.Contains(t, got, "envelope_verified")

	res = runCLI(t, "--database-url", url, "runs", "show", "999999")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, "no run 999999")
	res = runCLI(t, "--database-url", url, "runs", "show", "abc")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, `run id: want a positive number, got "abc"`)
}

// A run whose tool definitions were cut says so.
func TestRunsShowSaysWhenToolDefinitionsWereCut(t *testing.T) {
	t.Parallel()
	url, pool, _ := signedMixedRound(t, 1, 0)
	var runID int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id FROM run_facts`).Scan(&runID))
	_, err := pool.Exec(t.Context(), `UPDATE probe_runs SET result = result || '{"tools": 300, "tool_definitions_cut": 71}' WHERE id = $1`, runID)
	require.NoError(t, err)

	res := runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(runID))
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "71 not stored: over the bytes a run or the server's day may store")
	res = runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(runID), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Result struct {
			Cut int `json:"tool_definitions_cut"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	assert.Equal(t, 71, got.Result.Cut)
}

func TestAnExportedRunVerifiesOfflineWithTheExportedKey(t *testing.T) {
	t.Parallel()
	url, pool, _ := signedMixedRound(t, 1, 0)
	var runID int64
	var keyID string
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT id, key_id FROM run_facts`).Scan(&runID, &keyID))

	res := runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(runID), "--envelope")
	require.Equal(t, 0, res.Code, res.Stderr)
	envFile := writeFile(t, "run.json", res.Stdout)
	res = runCLI(t, "--database-url", url, "keys", "export", keyID)
	require.Equal(t, 0, res.Code, res.Stderr)
	require.True(t, strings.HasPrefix(res.Stdout, "-----BEGIN PUBLIC KEY-----\n"), res.Stdout)
	keyFile := writeFile(t, "probectl.pub", res.Stdout)

	// A database is configured, and out of reach: verify must not need it.
	offline := cli{env: map[string]string{"PROBECTL_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}}
	res = offline.run(t, "runs", "verify", envFile, "--public-key", keyFile)
	require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "VALID: signed by "+keyID)
	assert.Contains(t, res.Stdout, "checked up-0")

	res = offline.run(t, "runs", "verify", envFile, "--public-key", keyFile, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Equal(t, true, got["valid"])
	assert.Equal(t, "up-0", got["server"])

	// One byte of the payload changed: invalid, exit 1, and why.
	var env map[string]any
	require.NoError(t, json.Unmarshal([]byte(readFile(t, envFile)), &env))
	payload := []byte(env["payload"].(string))
	payload[10] ^= 1
	env["payload"] = string(payload)
	tampered, err := json.Marshal(env)
	require.NoError(t, err)
	res = offline.run(t, "runs", "verify", writeFile(t, "tampered.json", string(tampered)), "--public-key", keyFile)
	assert.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "INVALID")

	// Another key: invalid.
	other := runCLI(t, "--database-url", url, "keys", "generate", "--out", filepath.Join(t.TempDir(), "other.key"), "-o", "json")
	require.Equal(t, 0, other.Code)
	var k keyGeneratedJSON
	require.NoError(t, json.Unmarshal([]byte(other.Stdout), &k))
	res = runCLI(t, "--database-url", url, "keys", "export", k.KeyID)
	require.Equal(t, 0, res.Code)
	res = offline.run(t, "runs", "verify", envFile, "--public-key", writeFile(t, "other.pub", res.Stdout))
	assert.Equal(t, 1, res.Code, res.Stdout+res.Stderr)

	// Bad input: exit 2, naming what is wrong.
	for name, args := range map[string][]string{
		"no --public-key":             {envFile},
		"a key file that is no PEM":   {envFile, "--public-key", writeFile(t, "junk.pub", "hello")},
		"an envelope that is no JSON": {keyFile, "--public-key", keyFile},
		"a missing envelope file":     {filepath.Join(t.TempDir(), "none.json"), "--public-key", keyFile},
	} {
		res = offline.run(t, append([]string{"runs", "verify"}, args...)...)
		assert.Equal(t, 2, res.Code, "%s: %s", name, res.Stderr)
	}

	res = runCLI(t, "--database-url", url, "keys", "export", "ed25519:0000000000000000")
	assert.Equal(t, 2, res.Code)
	assert.Contains(t, res.Stderr, `no signing key "ed25519:0000000000000000" is registered`)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestTheRoundSummaryEndsWithTenFailuresAndWhereToFindTheRest(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	t.Cleanup(srv.Close)
	for i := range 12 {
		testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{Slug: fmt.Sprintf("down-%02d", i),
			URL: fmt.Sprintf("%s/%d", srv.URL, i), NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	}
	testfactory.Server(t.Context(), t, pool, &testfactory.ServerOpts{Slug: "refused", URL: srv.URL,
		NextCheckAt: testfactory.Ptr(time.Now().Add(-time.Hour))})
	res := runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets", "--fanout", "0",
		"--claim-limit", "12")
	require.Equal(t, 0, res.Code, res.Stderr)
	out := lines(res.Stdout)
	assert.Equal(t, "and 2 more (probectl runs list --round 1 --outcome failed,error)", out[len(out)-1])
	assert.Equal(t, strings.Fields("SERVER OUTCOME RUN WHY"), strings.Fields(out[len(out)-12]))
	assert.Equal(t, []string{"down-00", "failed"}, strings.Fields(out[len(out)-11])[:2])
	assert.Contains(t, out[len(out)-11], "HTTP 404")

	// Without --allow-private-targets, the guard refuses the loopback server: JSON lists it.
	res = runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--fanout", "0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var got struct {
		Failures []roundFailureJSON `json:"failures"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got), res.Stdout)
	require.Len(t, got.Failures, 1)
	assert.Equal(t, "refused", got.Failures[0].Server)
	assert.Contains(t, *got.Failures[0].Error, "loopback")
}

func TestTheDryRunFlagsDueServersTheSSRFGuardWillRefuse(t *testing.T) {
	t.Parallel()
	url, pool := migratedDB(t)
	fakefleet.New(t, nil).AddServers(t, pool, 2, "fleet", testfactory.ServerOpts{})

	res := runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0")
	require.Equal(t, 0, res.Code, res.Stderr)
	assert.Contains(t, res.Stdout, "2 claimable server(s) the SSRF guard will refuse: their checks fail without a request (a test fleet on a private network: --allow-private-targets)")
	assert.Regexp(t, `fleet-0\s.*due; the SSRF guard will refuse it: refused: 127\.0\.0\.1 is a loopback address`, res.Stdout)

	res = runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var plan planJSON
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &plan))
	assert.Equal(t, 2, plan.SSRFRefused)
	require.NotNil(t, plan.Servers[0].SSRFRefused)
	assert.Contains(t, *plan.Servers[0].SSRFRefused, "loopback")

	res = runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0", "--allow-private-targets", "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &plan))
	assert.Zero(t, plan.SSRFRefused)
	assert.Nil(t, plan.Servers[0].SSRFRefused)
}

func TestEveryHistoryCommandHasHelpWithExamples(t *testing.T) {
	t.Parallel()
	io, _, _, _ := testStreams()
	root := newRootCmd(newFactory(io, func(string) string { return "" }, buildInfo{}))
	for _, path := range [][]string{{"runs"}, {"runs", "list"}, {"runs", "show"}, {"runs", "verify"}, {"keys", "export"},
		{"servers", "show"}, {"servers", "pause"}, {"servers", "resume"}, {"servers", "delist"}} {
		cmd, _, err := root.Find(path)
		require.NoError(t, err, path)
		require.Equal(t, path[len(path)-1], cmd.Name(), path)
		assert.NotEmpty(t, cmd.Short, path)
		assert.NotEmpty(t, cmd.Long, path)
		assert.Contains(t, cmd.Example, "probectl "+strings.Join(path, " "), path)
	}
}

// A retired key's export says when it was retired, and `runs verify` applies it: a run checked
// before the retirement still verifies offline; once the retirement is moved before the run (a
// leak found later), the run is INVALID offline, as `runs show` (and `deploy verify`, which
// judges envelopes with the same function) say, instead of VALID from a bare PEM.
func TestRunsVerifyAppliesTheRetirementTheKeyExportCarries(t *testing.T) {
	t.Parallel()
	url, pool, _ := signedMixedRound(t, 1, 0)
	var runID int64
	var keyID string
	var checked time.Time
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT f.id, f.key_id, r.finished_at FROM run_facts f
	                                                JOIN probe_runs r ON r.id = f.id`).Scan(&runID, &keyID, &checked))
	res := runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(runID), "--envelope")
	require.Equal(t, 0, res.Code, res.Stderr)
	envFile := writeFile(t, "run.json", res.Stdout)
	offline := cli{env: map[string]string{"PROBECTL_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}}
	export := func() string {
		t.Helper()
		res := runCLI(t, "--database-url", url, "keys", "export", keyID)
		require.Equal(t, 0, res.Code, res.Stderr)
		return res.Stdout
	}
	bare := export()
	require.True(t, strings.HasPrefix(bare, "-----BEGIN PUBLIC KEY-----\n"), "a key in use exports as a bare PEM: %s", bare)

	// Retired now, after the run: the export says so, and the run still verifies.
	res = runCLI(t, "--database-url", url, "keys", "retire", keyID, "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	pem := export()
	require.Regexp(t, `^Retired-At: 20\d\d-\d\d-\d\dT[0-9:.]+Z\n-----BEGIN PUBLIC KEY-----\n`, pem)
	res = offline.run(t, "runs", "verify", envFile, "--public-key", writeFile(t, "retired.pub", pem))
	require.Equal(t, 0, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "VALID: signed by "+keyID)

	// A leak found later: the retirement moves before the run's check. runs show rejects the run.
	retiredAt := checked.Add(-time.Minute).UTC()
	res = runCLI(t, "--database-url", url, "keys", "retire", keyID, "--at", retiredAt.Format(time.RFC3339Nano))
	require.Equal(t, 0, res.Code, res.Stderr)
	res = runCLI(t, "--database-url", url, "runs", "show", fmt.Sprint(runID), "-o", "json")
	require.Equal(t, 0, res.Code, res.Stderr)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &shown))
	require.Equal(t, false, shown["envelope_verified"])

	pem = export()
	require.True(t, strings.HasPrefix(pem, "Retired-At: "+retiredAt.Format(time.RFC3339Nano)+"\n"), pem)
	keyFile := writeFile(t, "leaked.pub", pem)
	res = offline.run(t, "runs", "verify", envFile, "--public-key", keyFile)
	require.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stdout, "INVALID: "+envFile+" does not verify with key "+keyID+": signed after its key was retired")
	assert.Contains(t, res.Stdout, "was retired at "+retiredAt.Format(time.RFC3339Nano))
	res = offline.run(t, "runs", "verify", envFile, "--public-key", keyFile, "-o", "json")
	require.Equal(t, 1, res.Code, res.Stdout+res.Stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Stdout), &got))
	assert.Equal(t, false, got["valid"])
	assert.Equal(t, retiredAt.Format(time.RFC3339Nano), got["key_retired_at"])
	assert.Contains(t, got["error"], "signed after its key was retired")

	// The export is still the PEM OpenSSL reads: the retirement is text before the block.
	k, err := history.ParsePublicKey([]byte(pem))
	require.NoError(t, err)
	require.Len(t, k, 32)

	// A Retired-At that is not a time is bad input, not a verdict.
	res = offline.run(t, "runs", "verify", envFile, "--public-key", writeFile(t, "bad.pub", "Retired-At: yesterday\n"+bare))
	assert.Equal(t, 2, res.Code, res.Stdout+res.Stderr)
	assert.Contains(t, res.Stderr, "Retired-At: want an RFC 3339 time")
}
