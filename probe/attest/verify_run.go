package attest

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RegisteredKey is a key of signing_keys as a stored run is judged against it.
type RegisteredKey struct {
	Public ed25519.PublicKey
	// RetiredAt is when the key was retired (nil: it was not): what it signed for a job that
	// finished from then on does not verify.
	RetiredAt *time.Time
}

// StoredRun is a stored run's envelope and what it must be the statement of.
type StoredRun struct {
	Envelope json.RawMessage
	// FinishedAt is when the run's job finished, by the database's clock, the one a key's
	// retirement is dated by.
	FinishedAt time.Time
	Slug, URL  string
	JobID      int64
}

// VerifyRun is the rule every reader of stored runs judges them by (`deploy verify`, `runs show`):
// the envelope verifies against a key that was not yet retired when its job finished, and it is
// the statement of its own job and server. Retiring a key (rotating it) ends what it may sign
// from then on; the runs it signed before keep verifying.
func VerifyRun(run StoredRun, keys map[string]RegisteredKey) error {
	valid := make(map[string]ed25519.PublicKey, len(keys))
	all := make(map[string]ed25519.PublicKey, len(keys))
	for id, k := range keys {
		all[id] = k.Public
		if k.RetiredAt == nil || run.FinishedAt.Before(*k.RetiredAt) {
			valid[id] = k.Public
		}
	}
	st, err := Verify(run.Envelope, valid)
	if errors.Is(err, ErrUnknownKey) && len(valid) < len(all) {
		if _, errAll := Verify(run.Envelope, all); errAll == nil {
			return fmt.Errorf("signed only by a key retired before its job finished at %s",
				run.FinishedAt.Format(time.RFC3339Nano))
		}
	}
	if err != nil {
		return err
	}
	if err := st.CheckSubject(run.Slug, run.URL); err != nil {
		return err
	}
	return st.CheckJob(run.JobID)
}
