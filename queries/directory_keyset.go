package queries

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// DirectoryCursor is a position in one order of the directory: the sort key of a row and its slug
// (every order breaks ties by slug, so a cursor names exactly one place).
type DirectoryCursor struct {
	Slug    string
	Outcome string  // sort by outcome: the row's last outcome ("" never run)
	Uptime  float64 // sort by uptime: the row's 30-day uptime, -1 for none
}

// DirectoryAfter returns up to limit servers that come after the cursor (nil: from the start) in
// the order sort (slug, outcome or uptime), descending when desc, skipping offset first. It reads by
// keyset: a deep page costs what the first does, as long as offset is 0.
func DirectoryAfter(ctx context.Context, db DBTX, sort string, desc bool, after *DirectoryCursor, limit, offset int) ([]DirectoryEntry, error) {
	var slug *string
	var c DirectoryCursor
	if after != nil {
		c = *after
		slug = &c.Slug
	}
	dir := "Asc"
	if desc {
		dir = "Desc"
	}
	switch sort {
	case "slug":
		return collect[DirectoryEntry](ctx, db, "DirectorySlug"+dir, pgx.StrictNamedArgs{"slug": slug,
			"limit": limit, "offset": offset})
	case "outcome":
		return collect[DirectoryEntry](ctx, db, "DirectoryOutcome"+dir, pgx.StrictNamedArgs{"slug": slug,
			"outcome": c.Outcome, "limit": limit, "offset": offset})
	case "uptime":
		return collect[DirectoryEntry](ctx, db, "DirectoryUptime"+dir, pgx.StrictNamedArgs{"slug": slug,
			"uptime": c.Uptime, "limit": limit, "offset": offset})
	}
	return nil, fmt.Errorf("directory: no order %q", sort)
}

// DirectoryTotal counts the servers of the directory.
func DirectoryTotal(ctx context.Context, db DBTX) (int64, error) {
	total, err := valueOf[int64](ctx, db, "DirectoryTotal")
	if err != nil {
		return 0, fmt.Errorf("count servers: %w", err)
	}
	return total, nil
}

// CursorOf is the cursor of an entry in the order sort.
func CursorOf(e DirectoryEntry, sort string) DirectoryCursor {
	c := DirectoryCursor{Slug: e.Slug, Uptime: -1}
	switch sort {
	case "outcome":
		c.Outcome = e.LastOutcome
	case "uptime":
		if e.Uptime30d != nil {
			c.Uptime = *e.Uptime30d
		}
	}
	return c
}
