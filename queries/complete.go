package queries

import (
	"context"
	"fmt"
	"time"
)

// SlugCandidate is a server a shell may complete.
type SlugCandidate struct {
	Slug   string `db:"slug"`
	Status string `db:"status"`
}

// CompleteSlugs returns at most limit servers whose slug starts with prefix, ordered by slug.
func CompleteSlugs(ctx context.Context, db DBTX, prefix string, limit int) ([]SlugCandidate, error) {
	out, err := rowsOf[SlugCandidate](ctx, db, "CompleteSlugs", prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("complete slugs: %w", err)
	}
	return out, nil
}

// KeyCandidate is a signing key a shell may complete.
type KeyCandidate struct {
	KeyID     string     `db:"key_id"`
	RetiredAt *time.Time `db:"retired_at"`
}

// CompleteKeyIDs returns at most limit signing keys whose id starts with prefix, ordered by id.
func CompleteKeyIDs(ctx context.Context, db DBTX, prefix string, limit int) ([]KeyCandidate, error) {
	out, err := rowsOf[KeyCandidate](ctx, db, "CompleteKeyIDs", prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("complete key ids: %w", err)
	}
	return out, nil
}

// ReceiverCandidate is an alert receiver a shell may complete.
type ReceiverCandidate struct {
	Name   string `db:"name"`
	Format string `db:"format"`
}

// CompleteReceivers returns at most limit receivers whose name starts with prefix, ordered by name.
func CompleteReceivers(ctx context.Context, db DBTX, prefix string, limit int) ([]ReceiverCandidate, error) {
	out, err := rowsOf[ReceiverCandidate](ctx, db, "CompleteReceivers", prefix, limit)
	if err != nil {
		return nil, fmt.Errorf("complete receivers: %w", err)
	}
	return out, nil
}
