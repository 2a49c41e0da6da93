package audit

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/queries"
)

// DefaultWindow is the spacing under which two jobs of one server are a duplicate claim. It is below
// the most frequent plan (every 15 min), so such a pair is never a scheduled check.
const DefaultWindow = 10 * time.Minute

// DuplicatesParams choose the population and the definition of a duplicate claim.
//
// The population is every job requested in [Since, Until). A job is the second of a duplicate
// pair when it is in the population and was requested less than Window after the previous job of
// the same server, wherever that previous job lies: a pair reaching back before Since still counts
// (deploy verify asks "from T onwards, including the last job before T").
type DuplicatesParams struct {
	// Since opens the population (inclusive). Required.
	Since time.Time
	// Until closes it (exclusive). Zero means the database's now() at the start of the audit's
	// transaction, so the snapshot and the end of the population agree.
	Until time.Time
	// Window: a request gap strictly below it is a duplicate; exactly Window apart is not. Zero
	// means DefaultWindow; negative is an error.
	Window time.Duration
	// SplitAt cuts the population into periods (before / while the fan-out was live / after the
	// fix), each with its own jobs, servers and pairs. Each must lie strictly inside
	// (Since, Until); order and repeats do not matter.
	SplitAt []time.Time

	// inTx, set only by tests (export_test.go), runs inside the audit's transaction after the
	// reads, on the same connection.
	inTx func(ctx context.Context, tx pgx.Tx) error
}

// Class says what kind of duplicate a pair is; classes are counted apart because they have
// different causes.
type Class string

const (
	// ClassAfterFinish: the second job was requested after the first finished, the incident's
	// class (a claim that slipped between a probe's two writes).
	ClassAfterFinish Class = "after_finish"
	// ClassOverlap: the second job was requested before the first finished (a negative
	// gap_after_finish): two processes held the same server at once.
	ClassOverlap Class = "overlap"
	// ClassOpen: the first job never finished (as of the audit's snapshot).
	ClassOpen Class = "open"
	// ClassExplained: the second job is an explicit re-check (reason maintainer_claim or
	// manual), which the spacing guard lets through by design.
	ClassExplained Class = "explained"
	// ClassFailover: the database failed over between the two jobs, and the first claim (or the
	// second) had vanished with it and was restored from a spool or journal: the server looked
	// due on the new primary. Explained, with the time the new timeline was first seen.
	ClassFailover Class = "failover"
)

// Classes lists every class in the order reports show them.
var Classes = []Class{ClassAfterFinish, ClassOverlap, ClassOpen, ClassExplained, ClassFailover}

// Pair is one duplicate claim: two consecutive jobs of one server requested less than the window
// apart. Explained takes precedence over the other classes.
type Pair struct {
	ServerID          int64
	Slug              string
	FirstJobID        int64
	SecondJobID       int64
	FirstRequestedAt  time.Time
	FirstFinishedAt   *time.Time // nil: the first job is still open
	SecondRequestedAt time.Time
	SecondReason      string
	// RequestGap is the second request minus the first: at least 0, below the window.
	RequestGap time.Duration
	// GapAfterFinish is the second request minus the first job's finish: negative for an
	// overlap, nil when the first job is open. The incident write-up's table shows this gap.
	GapAfterFinish *time.Duration
	Class          Class
	// FailoverAt is when the failover of a ClassFailover pair was first seen (its new timeline).
	FailoverAt *time.Time
	// FirstBeforeSince says the first job lies before Since, outside the population; the pair
	// still counts, because the second job is in it.
	FirstBeforeSince bool
}

// Explained says whether the pair has a known cause: an explicit re-check, or a failover.
func (p Pair) Explained() bool { return p.Class == ClassExplained || p.Class == ClassFailover }

// Population is what the audit looked at.
type Population struct {
	Jobs    int64
	Servers int64
	Since   time.Time
	Until   time.Time
}

// Period is one slice of the population between two --split-at times (or Since/Until). A pair
// belongs to the period of its second job.
type Period struct {
	Since       time.Time
	Until       time.Time
	Jobs        int64
	Servers     int64
	Pairs       int64
	Unexplained int64
}

// ClosestPair is the two consecutive jobs of one server with the smallest request gap, duplicate
// or not. Its second job is in the population; its first is in the population too, unless the
// pair is a duplicate reaching back before Since. Ties go to the lowest server id, then the
// earliest pair.
type ClosestPair struct {
	ServerID          int64
	Slug              string
	FirstJobID        int64
	SecondJobID       int64
	FirstRequestedAt  time.Time
	SecondRequestedAt time.Time
	Gap               time.Duration
}

// DuplicatesReport is the answer to "did any server get checked twice?". It marshals to the
// documented JSON shape (docs/audit.md).
type DuplicatesReport struct {
	Population Population
	Window     time.Duration
	// Pairs are ordered by the second job's request time, then server id.
	Pairs []Pair
	// Closest is nil when no server has two jobs that qualify.
	Closest *ClosestPair
	// Periods cover [Since, Until) in order: one period when SplitAt is empty.
	Periods []Period
}

// Count is the number of pairs of class c.
func (r DuplicatesReport) Count(c Class) int {
	n := 0
	for _, p := range r.Pairs {
		if p.Class == c {
			n++
		}
	}
	return n
}

// Unexplained is the number of pairs that are not explicit re-checks: what --fail-on-found and
// deploy verify fail on.
func (r DuplicatesReport) Unexplained() int {
	return len(r.Pairs) - r.Count(ClassExplained) - r.Count(ClassFailover)
}

// Duplicates runs the duplicate-claim audit in its own READ ONLY, REPEATABLE READ transaction on
// db (a pool or a connection). It never writes, so it runs under a SELECT-only role and on a hot
// standby.
func Duplicates(ctx context.Context, db queries.DB, p DuplicatesParams) (*DuplicatesReport, error) {
	var r *DuplicatesReport
	err := inReadOnlyTx(ctx, db, func(tx pgx.Tx) error {
		var err error
		r, err = DuplicatesTx(ctx, tx, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// DuplicatesTx runs the duplicate-claim audit inside the caller's transaction, so that a caller
// such as deploy verify reads everything from one snapshot (queries.InReadOnlyTx begins one). tx
// must be READ ONLY and REPEATABLE READ or SERIALIZABLE: ErrNotReadOnly or ErrNotOneSnapshot say
// otherwise. DuplicatesTx neither commits nor rolls back. Like every Tx variant, it sets the
// audits' planner settings (custom plans, no JIT; queries.AuditPlanSettings) for the rest of tx,
// so the caller's statements after it are planned that way too.
func DuplicatesTx(ctx context.Context, tx pgx.Tx, p DuplicatesParams) (*DuplicatesReport, error) {
	if err := enter(ctx, tx); err != nil {
		return nil, err
	}
	p, err := p.resolve(ctx, tx)
	if err != nil {
		return nil, err
	}
	// A window reaching before the oldest kept partition would be answered from part of the jobs.
	if err := retention.CheckWindow(ctx, tx, p.Since); err != nil {
		return nil, err
	}
	r, err := scanDuplicates(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	if p.inTx != nil {
		if err := p.inTx(ctx, tx); err != nil {
			return nil, err
		}
	}
	return r, nil
}
