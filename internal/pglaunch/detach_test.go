package pglaunch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// helperEnv makes this test binary, run again as a child, start a cluster and exit without
// stopping it (see TestHelperStartsAClusterAndExits).
const helperEnv = "PGLAUNCH_TEST_HELPER"

// started is what the helper reports about the cluster it left behind.
type started struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
	Dir string `json:"dir"`
}

// TestHelperStartsAClusterAndExits is not a test on its own: run as a child with helperEnv set
// to "detach" or "attach", it starts a cluster, prints where it is and returns without Stop, so
// the child process exits with the server still started.
func TestHelperStartsAClusterAndExits(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	c, err := Start(context.Background(), Options{Detach: mode == "detach"})
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(os.Stdout).Encode(started{URL: c.URL("postgres"), PID: c.PID(), Dir: c.Dir()}))
}

// startInChild runs the helper and returns what it left behind, removed when the test ends.
func startInChild(t *testing.T, mode string) started {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartsAClusterAndExits$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	out, err := cmd.Output()
	require.NoError(t, err, "helper: %s", out)
	var s started
	for _, line := range splitLines(out) {
		if json.Unmarshal(line, &s) == nil && s.PID != 0 {
			break
		}
	}
	require.NotZero(t, s.PID, "helper printed no cluster: %s", out)
	t.Cleanup(func() {
		stopByHand(s.PID)
		os.RemoveAll(s.Dir)
	})
	return s
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

// stopByHand is what `probectl demo --keep` tells the user to do: SIGINT, wait until it is gone.
func stopByHand(pid int) bool {
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		return errors.Is(err, syscall.ESRCH)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return true
		}
	}
	return false
}

func answers(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func TestADetachedServerOutlivesTheProcessThatStartedIt(t *testing.T) {
	t.Parallel()
	s := startInChild(t, "detach")
	require.NoError(t, answers(t.Context(), s.URL), "the server died with the process that started it")
	require.True(t, stopByHand(s.PID), "SIGINT did not stop the kept server")
	require.Error(t, answers(t.Context(), s.URL))
}

func TestAnAttachedServerDiesWithTheProcessThatStartedIt(t *testing.T) {
	t.Parallel()
	s := startInChild(t, "attach")
	// The kernel's SIGKILL reaches the postmaster when the child exits; give it a moment to land.
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = answers(t.Context(), s.URL); err != nil {
			break
		}
	}
	require.Error(t, err, "the server outlived the process that started it")
}
