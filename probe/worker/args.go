package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/settings"
)

// InvocationArgs is one invocation of a queued round, as a River job. Its JSON is stored in
// river_job.args until a worker runs it, possibly a worker of the next release: the shape is
// pinned (testdata/invocation_args.golden) and a worker still reads the previous release's
// (UnmarshalJSON).
type InvocationArgs struct {
	RoundID    int64     `json:"round_id"`
	Invocation int       `json:"invocation"`
	StartedAt  time.Time `json:"started_at"`
	// Settings are the round's, with the keys every settings JSON uses (durations in seconds).
	Settings probe.Settings `json:"settings"`
	// TimeoutSeconds is the job's timeout, the invocation's worst case; the tick reads it to tell
	// a dead worker's job from a live one (queries/worker.sql).
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// Kind is the River job kind of an invocation.
func (InvocationArgs) Kind() string { return "probectl_invocation" }

// InsertOpts: at most three attempts, in probectl's queue.
func (InvocationArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Queue: Queue}
}

// Invocations are the River jobs of round id, started at startedAt with settings s.
func Invocations(id int64, startedAt time.Time, s probe.Settings) []river.InsertManyParams {
	out := make([]river.InsertManyParams, s.Invocations())
	for i := range out {
		out[i] = river.InsertManyParams{Args: InvocationArgs{RoundID: id, Invocation: i, StartedAt: startedAt,
			Settings: s, TimeoutSeconds: s.JobWorstCase().Seconds()}}
	}
	return out
}

// MarshalJSON writes the settings in both shapes for one release: this release's keys and the
// previous release's (Go field names, durations in nanoseconds). A worker of the previous release
// that takes an invocation this one queued (during a rolling deploy, or after going back one
// version) decodes its untagged settings by field name, case-insensitively: with this release's
// keys alone it would read the claim limit, the spacing and the budgets as zeros and claim
// nothing. The keys of the two shapes that match the same field ("fanout", "Fanout") carry equal
// values. The previous shape can go in the release after next.
func (a InvocationArgs) MarshalJSON() ([]byte, error) {
	type plain InvocationArgs
	both := map[string]json.RawMessage{}
	for _, shape := range []any{a.Settings, previousOf(a.Settings)} {
		b, err := json.Marshal(shape)
		if err != nil {
			return nil, fmt.Errorf("invocation settings: %w", err)
		}
		if err := json.Unmarshal(b, &both); err != nil {
			return nil, fmt.Errorf("invocation settings: %w", err)
		}
	}
	settingsJSON, err := json.Marshal(both)
	if err != nil {
		return nil, fmt.Errorf("invocation settings: %w", err)
	}
	return json.Marshal(struct {
		plain
		Settings json.RawMessage `json:"settings"`
	}{plain(a), settingsJSON})
}

// UnmarshalJSON reads both shapes of the settings: this release's (snake_case, seconds) and the
// previous release's, which stored them untagged (Go field names, durations in nanoseconds). An
// invocation queued by a worker of the previous release, before a rolling deploy, still runs.
func (a *InvocationArgs) UnmarshalJSON(b []byte) error {
	type plain InvocationArgs
	var raw struct {
		plain
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*a = InvocationArgs(raw.plain)
	if len(raw.Settings) == 0 || bytes.Equal(raw.Settings, []byte("null")) {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw.Settings, &keys); err != nil {
		return fmt.Errorf("invocation settings: %w", err)
	}
	if _, current := keys["claim_limit"]; current {
		return json.Unmarshal(raw.Settings, &a.Settings)
	}
	var old previousSettings
	if err := json.Unmarshal(raw.Settings, &old); err != nil {
		return fmt.Errorf("invocation settings (previous shape): %w", err)
	}
	a.Settings = old.settings()
	return nil
}

// previousSettings is the previous release's probe.Settings, as its River jobs stored them.
type previousSettings struct {
	Fanout              int
	ClaimLimit          int
	Concurrency         int
	MinSpacing          time.Duration
	MaxDuration         time.Duration
	RequestTimeout      time.Duration
	MaxBodyBytes        int64
	Finish              string
	AllowPrivateTargets bool
	Trigger             string
	Version             string
	Contact             string
	ReleaseID           *int64
}

// previousOf is s in the previous release's shape.
func previousOf(s settings.Settings) previousSettings {
	return previousSettings{Fanout: s.Fanout, ClaimLimit: s.ClaimLimit, Concurrency: s.Concurrency,
		MinSpacing: s.MinSpacing.D(), MaxDuration: s.MaxDuration.D(), RequestTimeout: s.RequestTimeout.D(),
		MaxBodyBytes: s.MaxBodyBytes, Finish: s.Finish, AllowPrivateTargets: s.AllowPrivateTargets,
		Trigger: s.Trigger, Version: s.Version, Contact: s.Contact, ReleaseID: s.ReleaseID}
}

func (p previousSettings) settings() settings.Settings {
	return settings.Settings{
		Carried: settings.Carried{Fanout: p.Fanout, ClaimLimit: p.ClaimLimit, Concurrency: p.Concurrency,
			MinSpacing: settings.Duration(p.MinSpacing), RequestTimeout: settings.Duration(p.RequestTimeout),
			MaxDuration: settings.Duration(p.MaxDuration), Finish: p.Finish, Contact: p.Contact},
		MaxBodyBytes: p.MaxBodyBytes, AllowPrivateTargets: p.AllowPrivateTargets, Trigger: p.Trigger,
		Version: p.Version, ReleaseID: p.ReleaseID,
	}
}
