package settings

// Finish modes.
const (
	// FinishTx advances, stores the run and closes the job in one transaction.
	FinishTx = "tx"
	// FinishAdvanceFirst makes two writes in the safe order, for databases without probe_finish.
	FinishAdvanceFirst = "advance-first"
)

// Triggers of a round.
const (
	TriggerCron   = "cron"
	TriggerManual = "manual"
)

// Settings are everything that decides how a round runs. They are recorded on the round's row
// (Record), carried by a queued round's River jobs, and shown with the same keys everywhere.
type Settings struct {
	Carried
	// MaxBodyBytes caps each response body a check reads.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// AllowPrivateTargets lets checks reach loopback, private and link-local addresses.
	AllowPrivateTargets bool `json:"allow_private_targets"`
	// Trigger is TriggerCron or TriggerManual.
	Trigger string `json:"trigger"`
	// Version is the probectl version that runs the round.
	Version string `json:"version"`
	// ReleaseID is the release the carried settings came from, if any.
	ReleaseID *int64 `json:"release_id"`
}

// WithDefaults fills what a stored release may leave empty: a release recorded before releases
// had a contact (NULL) probes with the default one.
func (c Carried) WithDefaults() Carried {
	if c.Contact == "" {
		c.Contact = DefaultContact
	}
	return c
}

// Invocations is the number of invocations of a round: the cron one plus the fan-out.
func (s Settings) Invocations() int { return s.Fanout + 1 }

// Capacity is the most jobs a round with these settings can claim.
func (s Settings) Capacity() int { return s.Invocations() * s.ClaimLimit }

// Round is the settings of a round as `run round -o json` shows them: every setting, and the
// in-flight window its jobs' leases last.
type Round struct {
	Settings
	InFlight Duration `json:"in_flight_seconds"`
}

// RoundOf is s as a round shows it.
func RoundOf(s Settings) Round { return Round{Settings: s, InFlight: Duration(InFlightWindow)} }

// Record is what a round's row stores as its settings (probe_rounds.settings): the round's
// settings and how it signs.
type Record struct {
	Round
	Signed bool   `json:"signed"`
	KeyID  string `json:"key_id"`
}

// RecordOf is the record of a round run with s, signed with keyID ("" when unsigned).
func RecordOf(s Settings, keyID string) Record {
	return Record{Round: RoundOf(s), Signed: keyID != "", KeyID: keyID}
}
