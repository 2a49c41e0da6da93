package alerts

import (
	"context"
	"encoding/json"

	"github.com/probectl/probectl/queries"
)

// VerifyFailure is what a verify.failed event says: the release and the checks that failed.
type VerifyFailure struct {
	ReleaseID int64    `json:"release_id"`
	Version   string   `json:"version"`
	Failed    []string `json:"failed_checks"`
}

// VerifyFailed writes a verify.failed event for a post-deploy verification that failed, to be
// delivered like every other event; it returns the event's id.
func VerifyFailed(ctx context.Context, db queries.DBTX, f VerifyFailure) (string, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	return queries.EmitVerifyFailed(ctx, db, data)
}
