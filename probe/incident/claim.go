package incident

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/probectl/probectl/queries"
)

var (
	//go:embed unleased_claim.sql
	unleasedClaim string
	//go:embed claim_definition.sql
	claimDefinition string
)

// UnleasedClaim puts the claim of the incident's time back in db: probe_claim, which leaves a
// claimed server due while its job is open, under the name rounds call (probe_claim_due, whose
// lease would otherwise hide the gap between the incident's two writes). The returned restore puts
// the definition db had before back, so that the drift check of `deploy verify` passes again.
// Only for a throwaway database: the demo's or a test's.
func UnleasedClaim(ctx context.Context, db queries.DBTX) (restore func(context.Context) error, err error) {
	var def string
	if err := db.QueryRow(ctx, claimDefinition).Scan(&def); err != nil {
		return nil, fmt.Errorf("read the claim's definition: %w", err)
	}
	if _, err := db.Exec(ctx, unleasedClaim); err != nil {
		return nil, fmt.Errorf("install the claim without its lease: %w", err)
	}
	return func(ctx context.Context) error {
		if _, err := db.Exec(ctx, def); err != nil {
			return fmt.Errorf("put the claim's lease back: %w", err)
		}
		return nil
	}, nil
}
