// Package archive writes the runs of a time range to a file that outlives the database, and
// verifies such a file offline: JSON lines, one run each (its job, its server with the URL
// redacted as every view prints it, its result and its signed DSSE envelope verbatim), gzip when
// the file name ends in .gz, zstd when it ends in .zst, and a trailing manifest line with the
// count, the first and last time and the SHA-256 of every byte before it (docs/retention.md).
package archive

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/klauspost/compress/zstd"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// Line is one run in an archive. The envelope is the run's own, byte for byte: it verifies
// offline with the public key alone.
type Line struct {
	RunID       int64           `json:"run_id"`
	JobID       int64           `json:"job_id"`
	RoundID     *int64          `json:"round_id"`
	Server      string          `json:"server"`
	URL         string          `json:"url"`
	Kind        string          `json:"kind"`
	RequestedAt time.Time       `json:"requested_at"`
	StartedAt   time.Time       `json:"started_at"`
	FinishedAt  time.Time       `json:"finished_at"`
	JobOutcome  *string         `json:"job_outcome"`
	Late        bool            `json:"late"`
	Requests    int             `json:"requests"`
	Result      json.RawMessage `json:"result"`
	Envelope    json.RawMessage `json:"envelope"`
}

// Manifest closes an archive: what it holds and the digest of everything before it.
type Manifest struct {
	Runs  int64      `json:"runs"`
	First *time.Time `json:"first_started_at"`
	Last  *time.Time `json:"last_started_at"`
	// Before: the runs of the jobs requested before this time (and From on, when set).
	Before time.Time  `json:"before"`
	From   *time.Time `json:"from,omitempty"`
	// SHA256 of the archive's content before the manifest line (uncompressed), hex.
	SHA256 string `json:"sha256"`
}

// manifestLine is the last line's shape: {"manifest": {...}}.
type manifestLine struct {
	Manifest *Manifest `json:"manifest"`
}

// Request is what to export and where.
type Request struct {
	Path   string
	Before time.Time
	From   *time.Time
	Who    string
}

// ErrExists: the archive file is there already; an archive is never overwritten.
var ErrExists = errors.New("the archive file exists already; an archive is never overwritten")

// Export writes the runs of the jobs requested before req.Before to a new file at req.Path and
// records the export. The file is written under a temporary name and renamed when complete, so
// a file at Path is always a whole archive.
func Export(ctx context.Context, db queries.DBTX, req Request) (queries.Export, error) {
	if _, err := os.Lstat(req.Path); err == nil {
		return queries.Export{}, fmt.Errorf("%s: %w", req.Path, ErrExists)
	}
	tmp, err := os.CreateTemp(filepath.Dir(req.Path), "."+filepath.Base(req.Path)+".*")
	if err != nil {
		return queries.Export{}, fmt.Errorf("create archive: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	// Every run id up to drawn was handed out by a transaction running now or ended; once those
	// running now end, every run up to drawn is committed (or never will be), and the export's
	// snapshot, taken after, sees all of them. A run above drawn may still come in a range the
	// export covers: the export is recorded as reaching drawn at most, and a prune keeps a
	// partition with a run above it (queries.PrunablePartitions, the detach's check).
	drawn, err := waitForDrawnRuns(ctx, db)
	if err != nil {
		return queries.Export{}, err
	}
	m, maxID, err := write(ctx, db, tmp, req)
	if maxID != nil && *maxID > drawn {
		maxID = &drawn
	}
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return queries.Export{}, err
	}
	if err := os.Link(tmp.Name(), req.Path); err != nil {
		return queries.Export{}, fmt.Errorf("place archive %s: %w", req.Path, err)
	}
	e := queries.Export{FileName: filepath.Base(req.Path), Before: req.Before, RangeFrom: req.From, Runs: m.Runs, FirstAt: m.First,
		LastAt: m.Last, MaxRunID: maxID, SHA256: m.SHA256, ExportedBy: req.Who}
	if err := queries.RecordExport(ctx, db, &e); err != nil {
		return queries.Export{}, unrecorded(err, req.Path)
	}
	return e, nil
}

// unrecorded is an export's error when its record failed (err), with the archive at path placed.
// When the database answered with an error, nothing was recorded: the archive goes (this export
// linked that name, so it is this export's), and a file at --out never stands for an export the
// database does not know. When it did not answer (a connection lost), the record may have
// committed: then the archive is what a prune's export is, and stays, said so.
func unrecorded(err error, path string) error {
	if _, answered := errors.AsType[*pgconn.PgError](err); answered {
		if rmErr := os.Remove(path); rmErr != nil {
			return errors.Join(err, fmt.Errorf("remove the archive it was not recorded for: %w", rmErr))
		}
		return err
	}
	return fmt.Errorf("%w; the archive %s is whole, but whether its export was recorded is not known (the database did not "+
		"answer): keep it, and look (SELECT id FROM probe_run_exports WHERE file_name = '%s'); if no row, remove it and "+
		"export again", err, path, strings.ReplaceAll(filepath.Base(path), "'", "''"))
}

// ExportWait bounds how long an export waits for the transactions running when it starts (one of
// them may have drawn a run id and not yet stored its run); ExportWaitPoll is how often it looks.
const (
	ExportWait     = time.Minute
	ExportWaitPoll = 20 * time.Millisecond
)

// WaitError says an export gave up waiting for transactions older than it (could not work).
type WaitError struct {
	Open []string
}

func (e *WaitError) Error() string {
	return fmt.Sprintf("%d transaction(s) running since before the export are still open after %s (virtual transaction ids %s): "+
		"one may hold a run the export would miss; end them (pg_stat_activity, pg_locks) and export again",
		len(e.Open), ExportWait, strings.Join(e.Open, ", "))
}

// waitForDrawnRuns reads the last run id handed out, then waits until every other transaction
// running then has ended, and returns that id.
func waitForDrawnRuns(ctx context.Context, db queries.DBTX) (int64, error) {
	drawn, err := queries.RunIDsDrawn(ctx, db)
	if err != nil {
		return 0, err
	}
	open, err := queries.OpenTransactions(ctx, db)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(ExportWait)
	for len(open) > 0 {
		if time.Now().After(deadline) {
			return 0, &WaitError{Open: open}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(ExportWaitPoll):
		}
		if open, err = queries.TransactionsStillOpen(ctx, db, open); err != nil {
			return 0, err
		}
	}
	return drawn, nil
}

// write streams the lines and the manifest into f, compressed by the file name's extension.
func write(ctx context.Context, db queries.DBTX, f *os.File, req Request) (Manifest, *int64, error) {
	var out io.Writer = f
	var zw io.WriteCloser
	switch {
	case strings.HasSuffix(req.Path, ".gz"):
		zw = gzip.NewWriter(f)
		out = zw
	case strings.HasSuffix(req.Path, ".zst"):
		// The window a reader must hold: Verify refuses a larger one (MaxZstdWindow).
		z, err := zstd.NewWriter(f, zstd.WithWindowSize(MaxZstdWindow), zstd.WithEncoderConcurrency(1))
		if err != nil {
			return Manifest{}, nil, fmt.Errorf("write archive: %w", err)
		}
		zw = z
		out = zw
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	sum := sha256.New()
	w := io.MultiWriter(bw, sum)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	m := Manifest{Before: req.Before.UTC(), From: req.From}
	var maxID *int64
	err := queries.EachExportedRun(ctx, db, req.Before, req.From, func(r queries.ExportedRun) error {
		l := Line{RunID: r.RunID, JobID: r.JobID, RoundID: r.RoundID, Server: r.Server, URL: check.RedactURL(r.EndpointURL),
			Kind: r.Kind, RequestedAt: r.RequestedAt.UTC(), StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt.UTC(),
			JobOutcome: r.JobOutcome, Late: r.Late, Requests: r.Requests, Result: r.Result, Envelope: r.Envelope}
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("write archive: %w", err)
		}
		m.Runs++
		if m.First == nil || l.StartedAt.Before(*m.First) {
			m.First = &l.StartedAt
		}
		if m.Last == nil || l.StartedAt.After(*m.Last) {
			m.Last = &l.StartedAt
		}
		id := r.RunID
		maxID = &id
		return nil
	})
	if err != nil {
		return Manifest{}, nil, err
	}
	m.SHA256 = hex.EncodeToString(sum.Sum(nil))
	if err := json.NewEncoder(bw).Encode(manifestLine{Manifest: &m}); err != nil {
		return Manifest{}, nil, fmt.Errorf("write archive: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return Manifest{}, nil, fmt.Errorf("write archive: %w", err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return Manifest{}, nil, fmt.Errorf("write archive: %w", err)
		}
	}
	return m, maxID, f.Sync()
}
