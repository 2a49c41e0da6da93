package queries

import (
	"context"
	"fmt"
	"time"
)

// Role says what kind of server a session reads: the primary, or a hot standby and how far
// behind it is (the commands that only read may run on one: --read-database-url).
type Role struct {
	Standby   bool          `db:"standby"`
	ReplayLag time.Duration `db:"replay_lag"`
}

// DatabaseRole reads the session's Role.
func DatabaseRole(ctx context.Context, db DBTX) (Role, error) {
	r, err := rowOf[Role](ctx, db, "DatabaseRole")
	if err != nil {
		return Role{}, fmt.Errorf("read whether the database is a standby: %w", err)
	}
	return r, nil
}
