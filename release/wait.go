package release

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// DefaultPollInterval is how often deploy verify --wait looks for the rounds.
const DefaultPollInterval = 5 * time.Second

// WaitOptions make deploy verify wait for the rounds it reads back.
type WaitOptions struct {
	// Timeout is the longest to wait (--wait); 0 does not wait.
	Timeout time.Duration
	// Interval is the time between looks (default DefaultPollInterval).
	Interval time.Duration
	// Progress, when set, is told after every look (the command prints it on a terminal).
	Progress func(Progress)
	// Tick, when set, replaces the ticker: each value received is one more look. Tests drive the
	// wait with it instead of sleeping.
	Tick <-chan time.Time
}

// Progress is what one look found.
type Progress struct {
	Wanted, Found, Finished int
	Waited                  time.Duration
	// ReleaseID is the release whose rounds are awaited; Deadline when the wait gives up.
	ReleaseID int64
	Deadline  time.Time
}

// Ready says whether every round wanted exists and has finished.
func (p Progress) Ready() bool { return p.Finished >= p.Wanted }

// waitForRounds looks for the rounds until all have finished or the timeout passes, and returns
// how long it waited. A timeout is not an error: the report that follows says inconclusive.
func waitForRounds(ctx context.Context, pool queries.DB, req VerifyRequest) (time.Duration, error) {
	w := req.Wait
	start := time.Now()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	tick := w.Tick
	if tick == nil {
		interval := w.Interval
		if interval <= 0 {
			interval = DefaultPollInterval
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		p, err := look(ctx, pool, req)
		if ctx.Err() != nil {
			return time.Since(start), parent.Err() // nil when only our own deadline passed
		}
		if err != nil {
			return time.Since(start), err
		}
		p.Waited, p.Deadline = time.Since(start), start.Add(w.Timeout)
		if w.Progress != nil {
			w.Progress(p)
		}
		if p.Ready() {
			return p.Waited, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), parent.Err()
		case <-tick:
		}
	}
}

// look counts the rounds wanted that exist and have finished, in one read-only transaction.
func look(ctx context.Context, pool queries.DB, req VerifyRequest) (Progress, error) {
	p := Progress{Wanted: req.Rounds}
	err := queries.InReadOnlyTx(ctx, pool, func(tx pgx.Tx) error {
		tg, err := resolveTarget(ctx, tx, req.ReleaseID)
		if err != nil {
			return err
		}
		p.ReleaseID = tg.release.ID
		p.Found, p.Finished, err = queries.VerifyRoundProgress(ctx, tx, tg.release.ID, tg.since, req.Rounds)
		return err
	})
	if err != nil {
		return p, fmt.Errorf("wait for rounds: %w", err)
	}
	return p, nil
}
