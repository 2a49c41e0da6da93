package audit_test

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// aServer is a row the write attempts below try to insert.
var aServer = testfactory.ServerRow{Slug: "intruder", EndpointURL: "https://intruder.example/", Kind: "http",
	Plan: "standard", Status: "active", CheckInterval: 12 * time.Hour, NextCheckAt: t0}

func TestTheAuditsOwnConnectionCannotWriteDuringTheAudit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server("s")
	f.finished(s, t0, time.Second, "")

	var hookRan bool
	var writeErr error
	p := audit.WithTxHook(audit.DuplicatesParams{Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour)},
		func(ctx context.Context, tx pgx.Tx) error {
			hookRan = true
			_, writeErr = testfactory.InsertServer(ctx, tx, aServer)
			return nil
		})
	_, err := audit.Duplicates(f.ctx, f.pool, p)

	require.True(t, hookRan)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, writeErr, &pgErr, "an insert through the audit's transaction must fail")
	require.Equal(t, "25006", pgErr.Code, "read_only_sql_transaction: %v", writeErr)
	require.Error(t, err, "the aborted transaction fails the audit rather than committing anything")

	// The control: the very same insert outside the audit works, so the refusal above came from
	// the READ ONLY transaction and not from the row.
	_, err = testfactory.InsertServer(f.ctx, f.pool, aServer)
	require.NoError(t, err)
}

func TestTheTxVariantsRefuseAWritableOrReadCommittedTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	err := pgx.BeginFunc(f.ctx, f.pool, func(tx pgx.Tx) error {
		_, err := audit.DuplicatesTx(f.ctx, tx, audit.DuplicatesParams{Since: t0})
		require.ErrorIs(t, err, audit.ErrNotReadOnly)
		_, err = audit.RateTx(f.ctx, tx, audit.RateParams{Since: t0})
		require.ErrorIs(t, err, audit.ErrNotReadOnly)
		_, err = audit.OpenTx(f.ctx, tx, audit.OpenParams{})
		require.ErrorIs(t, err, audit.ErrNotReadOnly)
		return nil
	})
	require.NoError(t, err)

	err = pgx.BeginTxFunc(f.ctx, f.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		_, err := audit.DuplicatesTx(f.ctx, tx, audit.DuplicatesParams{Since: t0})
		require.ErrorIs(t, err, audit.ErrNotOneSnapshot, "READ COMMITTED would let the scan and the details disagree")
		return nil
	})
	require.NoError(t, err)

	err = queries.InReadOnlyTx(f.ctx, f.pool, func(tx pgx.Tx) error {
		_, err := audit.DuplicatesTx(f.ctx, tx, audit.DuplicatesParams{Since: t0})
		return err
	})
	require.NoError(t, err, "a caller's READ ONLY transaction is accepted")
}

var roleSeq atomic.Int64

func TestEveryAuditRunsUnderARoleWithOnlySelect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := f.server("s")
	f.finished(s, t0, time.Second, "")
	f.finished(s, t0.Add(time.Second+168*time.Millisecond), time.Second, "")
	f.open(f.server("stuck"), t0, "")

	role := fmt.Sprintf("audit_reader_%d_%d", time.Now().UnixNano()%1_000_000_000, roleSeq.Add(1))
	ident := pgx.Identifier{role}.Sanitize()
	for _, stmt := range []string{
		"CREATE ROLE " + ident + " LOGIN",
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + ident,
	} {
		_, err := f.pool.Exec(f.ctx, stmt)
		require.NoError(t, err, "the test server's role must be able to create roles: %s", stmt)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_, err := f.pool.Exec(ctx, "DROP OWNED BY "+ident)
		require.NoError(t, err)
		_, err = f.pool.Exec(ctx, "DROP ROLE "+ident)
		require.NoError(t, err)
	})
	u, err := url.Parse(f.url)
	require.NoError(t, err)
	u.User = url.User(role)
	reader, err := queries.Connect(f.ctx, u.String(), "test", queries.ConnectOptions{})
	require.NoError(t, err)
	t.Cleanup(reader.Close)

	_, err = testfactory.InsertServer(f.ctx, reader, aServer)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42501", pgErr.Code, "the role really has no right to write")

	require.NoError(t, queries.CheckSchema(f.ctx, reader), "the commands' schema check only reads")
	dup, err := audit.Duplicates(f.ctx, reader, audit.DuplicatesParams{Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, dup.Pairs, 1)
	rate, err := audit.Rate(f.ctx, reader, audit.RateParams{Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, rate.Over, 1)
	open, err := audit.Open(f.ctx, reader, audit.OpenParams{Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Len(t, open.Jobs, 1)
	_, err = audit.Tools(f.ctx, reader, audit.ToolsParams{Since: t0.Add(-time.Hour), Until: t0.Add(time.Hour)})
	require.NoError(t, err)
}
