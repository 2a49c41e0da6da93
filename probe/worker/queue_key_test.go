package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// `run round --via-queue --wait` (the README's example) neither needs nor reads a signing key: the
// workers that run the round sign its runs, each with its own. With PROBECTL_SIGNING_KEY set it
// does not name that key as the round's signer; with no key and no --unsigned it runs; with
// --signing-key it says the flag does not apply (exit 2).
func TestRunRoundViaQueueWaitReadsNoKeyAndNamesNoSigner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a worker process")
	}
	ctx := context.Background()
	bin := buildBinary(t)
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	fleet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(fleet.Close)
	for i := range 2 {
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{URL: fmt.Sprintf("%s/%d", fleet.URL, i)})
	}
	rs := settings.Default().Carried
	rs.Fanout, rs.ClaimLimit, rs.Concurrency = 0, 2, 2
	_, err := release.Record(ctx, pool, release.RecordRequest{Version: "dev", Settings: rs, Actor: "test"})
	require.NoError(t, err)
	w := startWorker(t, bin, url)
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		<-w.done
	})

	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "probe.key")
	require.NoError(t, attest.WritePrivateKey(keyFile, priv))
	signer, err := attest.LoadSigner(keyFile)
	require.NoError(t, err)

	run := func(key string, args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(bin, args...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PROBECTL_SIGNING_KEY=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PROBECTL_DATABASE_URL="+url, "PROBECTL_SIGNING_KEY="+key)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return out.String(), errOut.String(), exitErr.ExitCode()
		}
		require.NoError(t, err)
		return out.String(), errOut.String(), 0
	}

	out, errOut, code := run(keyFile, "run", "round", "--via-queue", "--wait")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^\d+ +1 +2 +2 +2 +2 `, out, "the workers checked both servers")
	require.NotContains(t, out, signer.KeyID(), "the key in PROBECTL_SIGNING_KEY signed nothing: the workers signed")
	require.Contains(t, out, "signed by the workers, each with its own key")

	out, errOut, code = run("", "run", "round", "--via-queue", "--wait", "-o", "json")
	require.Equal(t, 0, code, "no key and no --unsigned: the workers sign, none is needed here\n%s", errOut)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.Contains(t, sum, "key_id")
	require.Nil(t, sum["key_id"], "a queued round names no key of its own")

	_, errOut, code = run("", "run", "round", "--via-queue", "--signing-key", keyFile)
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--signing-key: a round --via-queue is signed by the workers")
}
