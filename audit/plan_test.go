package audit_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/queries"
)

// pgx caches the statements of a connection. After five runs of one, PostgreSQL may switch it to
// a generic plan, planned without the population's bounds, which reads the population through
// the time index and sorts all of it (2.9 s instead of 1.0 s at 5 M jobs). A connection that
// lives long, as serve's does (an audit for every refresh of the page), gets there. The audit asks
// for custom plans in its transaction; pg_prepared_statements counts which kind each run of the
// scan got.
func TestTheScanIsNeverRunWithAGenericPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server("s")
	for i := range 4 {
		f.finished(s, t0.Add(time.Duration(i)*12*time.Hour), time.Second, "")
	}
	conn, err := pgx.Connect(f.ctx, f.url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(f.ctx) })

	const runs = 8 // PostgreSQL weighs a generic plan from the sixth run on
	for range runs {
		r, err := audit.Duplicates(f.ctx, conn, audit.DuplicatesParams{Since: t0.Add(-time.Hour), Until: t0.Add(3 * 24 * time.Hour)})
		require.NoError(t, err)
		require.EqualValues(t, 4, r.Population.Jobs)
	}

	var generic, custom int64
	require.NoError(t, conn.QueryRow(f.ctx,
		`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		queries.SQL("AuditDuplicateScan")).Scan(&generic, &custom))
	require.EqualValues(t, runs, custom, "every run of the scan planned with its bounds")
	require.Zero(t, generic, "the scan ran with a generic plan")
}
