package main

import (
	"context"
	"fmt"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// alertVerifyFailed writes the verify.failed event of a failed verification ('deploy verify
// --alert'); a worker, 'alerts deliver' or the next 'run round' delivers it. It says the event's
// id on stderr.
func alertVerifyFailed(ctx context.Context, f *factory, db queries.DBTX, rep *release.Report) error {
	vf := alerts.VerifyFailure{ReleaseID: rep.Release.ID, Version: rep.Release.Version, Failed: []string{}}
	for _, c := range rep.Checks {
		if c.Status == "fail" {
			vf.Failed = append(vf.Failed, c.Name)
		}
	}
	id, err := alerts.VerifyFailed(ctx, db, vf)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "verify.failed event %s written for the receivers that take it\n", id)
	return nil
}
