package settings

import (
	"math"
	"time"
)

// The lease arithmetic, in one place: a job is a lease (its claim time plus InFlightWindow), and
// everything a job may take in the worst case must fit it, or another round could take a live job
// for abandoned and claim its server again (docs/invariant.md).
const (
	// MaxRequests is the most requests one check of one server may make: the promise to operators
	// (probe/check enforces it).
	MaxRequests = 8
	// InFlightWindow is how long a job counts as open: past it the next round's start closes it
	// as abandoned (queries.CloseAbandoned). queries.InFlightWindow is this one.
	InFlightWindow = 15 * time.Minute
	// FinishTimeout is the finish's own budget: its writes, retries included.
	FinishTimeout = 30 * time.Second
	// LeaseMargin is how long before the database's lease the prober's own copy ends.
	LeaseMargin = 30 * time.Second
)

const (
	second = time.Second
	minute = time.Minute
)

// CheckBudget bounds one check: every request it may make at the per-request timeout.
func (s Settings) CheckBudget() time.Duration {
	return mulSat(MaxRequests, s.RequestTimeout.D())
}

// JobWorstCase is how long a job may stay open in the worst case: a full check, the round's
// budget and the finish's. It must fit the in-flight window.
func (s Settings) JobWorstCase() time.Duration {
	// Saturated, never wrapped: a timeout large enough to wrap 8 × timeout must fail the check.
	return addSat(addSat(s.CheckBudget(), s.MaxDuration.D()), FinishTimeout)
}

// leaseError is the lease check: nil when a job's worst case fits the in-flight window.
func (s Settings) leaseError() error {
	if s.RequestTimeout <= 0 || s.MaxDuration <= 0 || s.JobWorstCase() <= InFlightWindow {
		return nil
	}
	e := NewError("", "%d requests × %s %s + %s %s + finish %s = %s does not fit the %s "+
		"in-flight window; lower %s or %s", MaxRequests, RequestTimeout, s.RequestTimeout,
		MaxDuration, s.MaxDuration, FinishTimeout, s.JobWorstCase(), InFlightWindow,
		RequestTimeout, MaxDuration)
	e.Subject = "lease"
	return e
}

// mulSat is n × d, or the longest duration when that overflows (n >= 0, d >= 0).
func mulSat(n int, d time.Duration) time.Duration {
	if n > 0 && d > math.MaxInt64/time.Duration(n) {
		return math.MaxInt64
	}
	return time.Duration(n) * d
}

// addSat is a + b, or the longest duration when that overflows (a, b >= 0).
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
