package directory

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

// MaxReasonChars bounds the reason recorded with a status change.
const MaxReasonChars = 500

// StatusChange is what SetStatus did.
type StatusChange struct {
	Slug     string
	From, To string
	// Changed is false when the server already had that status: nothing was written.
	Changed bool
}

// SetStatus pauses, delists or resumes (status active) a server and records who did it and why.
// A paused or delisted server is never claimed (probe_claim_lease takes active servers only); a resumed
// one is due at once. The reason is required: a status change nobody can explain later is the
// kind of change this record exists to prevent.
func SetStatus(ctx context.Context, db queries.DBTX, slug, status, reason, actor string, now *time.Time) (StatusChange, error) {
	c := StatusChange{Slug: slug, To: status}
	switch status {
	case "active", "paused", "delisted":
	default:
		return c, &InvalidError{Err: fmt.Errorf("status %q: must be active, paused or delisted", status)}
	}
	if reason == "" {
		return c, &InvalidError{Err: errors.New("reason: required: say why, it is recorded with the change")}
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonChars || !utf8.ValidString(reason) {
		return c, &InvalidError{Err: fmt.Errorf("reason: at most %d characters of UTF-8, got %d", MaxReasonChars, n)}
	}
	if actor == "" {
		actor = "unknown"
	}
	from, changed, err := queries.ChangeServerStatus(ctx, db, slug, status, reason, actor, now)
	if errors.Is(err, queries.ErrNoServer) {
		return c, exit.UsageError(fmt.Errorf("server %q: %w", slug, ErrUnknownServer))
	}
	if err != nil {
		return c, err
	}
	c.From, c.Changed = from, changed
	return c, nil
}

// MaxStatusChange bounds the slugs one pause, resume or delist names: a person's list, not the
// directory.
const MaxStatusChange = 1000

// CheckStatusChange refuses a status change of no servers or of more than MaxStatusChange (an
// *InvalidError). It needs no database, so a command calls it before it connects; SetStatuses
// calls it too.
func CheckStatusChange(slugs []string) error {
	if len(slugs) == 0 {
		return &InvalidError{Err: errors.New("name at least one server")}
	}
	if len(slugs) > MaxStatusChange {
		return &InvalidError{Err: fmt.Errorf("at most %d servers change status at once, got %d", MaxStatusChange, len(slugs))}
	}
	return nil
}

// SetStatuses is SetStatus for several servers, in one transaction. All or none: an unknown slug
// (every one is named, in an *UnknownServersError) changes nothing and is bad input, as are no
// slugs and more than MaxStatusChange. A slug named twice is changed once. The servers' rows are
// locked in slug order, so two such changes that name the same servers in other orders do not
// deadlock; the changes come back in the order first named.
func SetStatuses(ctx context.Context, pool queries.DB, slugs []string, status, reason, actor string, now *time.Time) ([]StatusChange, error) {
	if err := CheckStatusChange(slugs); err != nil {
		return nil, err
	}
	return eachNamed(ctx, pool, slugs, func(tx pgx.Tx, slug string) (StatusChange, bool, error) {
		c, err := SetStatus(ctx, tx, slug, status, reason, actor, now)
		if errors.Is(err, ErrUnknownServer) {
			return c, false, nil
		}
		return c, true, err
	})
}
