package probe

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// downDB answers every statement as a database that is not there would, and records the job ids
// it was asked about.
type downDB struct {
	mu   sync.Mutex
	jobs []int64
}

var errDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (d *downDB) note(args []any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(args) > 0 {
		if id, ok := args[0].(int64); ok {
			d.jobs = append(d.jobs, id)
		}
	}
}

func (d *downDB) Exec(_ context.Context, _ string, args ...any) (pgconn.CommandTag, error) {
	d.note(args)
	return pgconn.CommandTag{}, errDown
}

func (d *downDB) Query(_ context.Context, _ string, args ...any) (pgx.Rows, error) {
	d.note(args)
	return nil, errDown
}

func (d *downDB) QueryRow(_ context.Context, _ string, args ...any) pgx.Row {
	d.note(args)
	return errRow{}
}

type errRow struct{}

func (errRow) Scan(...any) error { return errDown }

// A replay that finds the database down stops trying after the first result: the others stay in
// the spool, counted as left, instead of each waiting out a finish's whole budget (with three
// results, the replay would otherwise hold a round's start for three budgets).
func TestAReplayStopsTryingWhenTheDatabaseDoesNotAnswer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "round-1"+spoolExt))
	require.NoError(t, err)
	for job := int64(1); job <= 3; job++ {
		line, err := json.Marshal(spoolEntry{RoundID: 1, Slug: "s", Finish: FinishTx, JobID: job, ServerID: job,
			Outcome: "ok", Result: json.RawMessage(`{}`), SpooledAt: time.Now()})
		require.NoError(t, err)
		_, err = f.Write(append(line, '\n'))
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())

	// A short deadline ends the first result's retries at once; each result is still tried once.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	db := &downDB{}
	rec, err := Recover(ctx, db, dir, nil)
	require.NoError(t, err)
	require.Equal(t, 3, rec.Left, "every result stays in the spool")
	require.Zero(t, rec.Stored)
	for _, job := range db.jobs {
		require.Equal(t, int64(1), job, "a result after the first was tried while the database was down")
	}
	require.NotEmpty(t, db.jobs)
}
