// Package completion finds what a shell may complete from the database (server slugs, signing key
// ids). A shell asks on every Tab: the answers are bounded in number, and the caller bounds the
// time (cmd/probectl gives up after a second and completes nothing).
package completion

import (
	"context"
	"time"

	"github.com/probectl/probectl/queries"
)

// Limit bounds the candidates of one completion: past it a person types more letters.
const Limit = 100

// Candidate is a value and a few words about it, shown beside the value by shells that can.
type Candidate struct {
	Value       string
	Description string
}

// Slugs are the servers whose slug starts with prefix, with their status.
func Slugs(ctx context.Context, db queries.DBTX, prefix string) ([]Candidate, error) {
	rows, err := queries.CompleteSlugs(ctx, db, prefix, Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(rows))
	for _, r := range rows {
		out = append(out, Candidate{Value: r.Slug, Description: r.Status})
	}
	return out, nil
}

// KeyIDs are the signing keys whose id starts with prefix, each said to be in use or retired
// (and since when, in UTC).
func KeyIDs(ctx context.Context, db queries.DBTX, prefix string) ([]Candidate, error) {
	rows, err := queries.CompleteKeyIDs(ctx, db, prefix, Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(rows))
	for _, r := range rows {
		desc := "in use"
		if r.RetiredAt != nil {
			desc = "retired " + r.RetiredAt.Format(time.RFC3339)
		}
		out = append(out, Candidate{Value: r.KeyID, Description: desc})
	}
	return out, nil
}

// Receivers are the alert receivers whose name starts with prefix, each with its format.
func Receivers(ctx context.Context, db queries.DBTX, prefix string) ([]Candidate, error) {
	rows, err := queries.CompleteReceivers(ctx, db, prefix, Limit)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, 0, len(rows))
	for _, r := range rows {
		out = append(out, Candidate{Value: r.Name, Description: r.Format})
	}
	return out, nil
}
