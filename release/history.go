package release

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// History is what `deploy list` shows: the releases, newest first, and every activation (deploys
// and rollbacks) with who and why, newest first.
type History struct {
	Releases []Release
	Events   []Event
}

// ReadHistory reads up to limit releases and up to limit events, from one snapshot.
func ReadHistory(ctx context.Context, pool queries.DB, limit int) (*History, error) {
	h := &History{}
	err := queries.InReadOnlyTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if h.Releases, err = queries.ListReleases(ctx, tx, limit); err != nil {
			return err
		}
		h.Events, err = queries.ListReleaseEvents(ctx, tx, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read release history: %w", err)
	}
	return h, nil
}
