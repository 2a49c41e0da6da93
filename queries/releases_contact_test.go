package queries_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// previousInsertRelease is the previous release's InsertRelease, which does not name contact
// (migrations/00018): it must keep working, and its release reads back with the default contact.
const previousInsertRelease = `
INSERT INTO releases (version, fanout, claim_limit, concurrency, min_spacing, finish_mode, ways_back,
                      note, deployed_by, kind, previous_id, derived_from, active, deployed_at,
                      request_timeout, max_duration)
VALUES ($1, $2, $3, $4, $5::interval, $6, $7, $8, $9, $10, $11, $12, $13,
        coalesce($14::timestamptz, now()), $15::interval, $16::interval)
RETURNING id`

func TestAReleaseThePreviousBinaryRecordedReadsWithTheDefaultContact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := migrated.Pool(t)
	var id int64
	require.NoError(t, pool.QueryRow(ctx, previousInsertRelease, "v1", 19, 5, 3, 10*time.Minute, "tx", []string{},
		"", "ana", "deploy", nil, nil, true, nil, 10*time.Second, 4*time.Minute).Scan(&id))
	r, err := queries.GetRelease(ctx, pool, id)
	require.NoError(t, err)
	require.Equal(t, "", r.Contact, "NULL: the binary's default")
	require.Equal(t, settings.DefaultContact, r.Carried.WithDefaults().Contact)
	require.Equal(t, settings.Duration(10*time.Minute), r.MinSpacing)

	// And this binary's insert stores what it is given, every carried column by its db tag.
	c := settings.Default().Carried
	c.Contact, c.MaxDuration = "mailto:probes@example.org", settings.Duration(3*time.Minute)
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := queries.DeactivateRelease(ctx, tx, id); err != nil {
			return err
		}
		id, err = queries.InsertRelease(ctx, tx, queries.InsertReleaseParams{Version: "v2", Carried: c, DeployedBy: "ana",
			Kind: "deploy", Active: true})
		return err
	})
	require.NoError(t, err)
	r, err = queries.GetRelease(ctx, pool, id)
	require.NoError(t, err)
	require.Equal(t, c, r.Carried)
}
