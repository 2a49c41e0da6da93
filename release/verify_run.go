package release

import "github.com/probectl/probectl/queries"

// VerifyRun checks one run's envelope as deploy verify does: signed by a key that was not yet
// retired when its job finished, and the statement of its own job and server. `runs show` uses it,
// so the two never disagree about a run.
func VerifyRun(run queries.SignedRun, keys map[string]queries.VerificationKey) error {
	return verifyEnvelope(run, keys)
}
