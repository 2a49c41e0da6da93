package audit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
)

// A claim that vanished with an asynchronous failover and was restored from a journal, followed by
// a claim of the same server on the new primary (its server looked due there): the pair is a
// failover's, explained, with the time the new timeline was first seen. A pair without a restored
// job, under the same failover, stays what it was.
func TestAPairThatAFailoverCausedIsExplainedAsFailover(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.pool.Exec(f.ctx, `INSERT INTO probectl_timelines (timeline_id, first_seen_at, seen_by) VALUES (1, $1, 'a-1')`,
		t0.Add(-time.Hour))
	require.NoError(t, err)
	switched := t0.Add(2 * time.Minute)
	_, err = f.pool.Exec(f.ctx, `INSERT INTO probectl_timelines (timeline_id, previous_timeline_id, first_seen_at, seen_by)
	                             VALUES (2, 1, $1, 'b-2')`, switched)
	require.NoError(t, err)

	lost := f.server("lost-claim")
	restored := f.finished(lost, t0, 5*time.Second, "")
	_, err = f.pool.Exec(f.ctx, `INSERT INTO probe_restored_jobs (job_id, server_id, original_job_id, original_requested_at, source)
	                             VALUES ($1, $2, $1, $3, 'journal')`, restored, lost, t0)
	require.NoError(t, err)
	f.finished(lost, t0.Add(3*time.Minute), time.Second, "")

	plain := f.server("plain")
	f.finished(plain, t0, 5*time.Second, "")
	f.finished(plain, t0.Add(3*time.Minute), time.Second, "")

	r, err := audit.Duplicates(f.ctx, f.pool, audit.DuplicatesParams{Since: t0, Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	got := map[string]audit.Pair{}
	for _, p := range r.Pairs {
		got[p.Slug] = p
	}
	require.Len(t, got, 2)
	p := got["lost-claim"]
	require.Equal(t, audit.ClassFailover, p.Class)
	require.True(t, p.Explained())
	require.NotNil(t, p.FailoverAt)
	require.True(t, p.FailoverAt.Equal(switched), "%v", p.FailoverAt)
	require.Equal(t, audit.ClassAfterFinish, got["plain"].Class)
	require.Equal(t, 1, r.Unexplained())
}
