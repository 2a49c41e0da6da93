package release

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// Release is a recorded release: its version, the round settings it ships, the ways back its plan
// approved, and how it was deployed and rolled back.
type Release = queries.Release

// Event is one activation of a release (a deploy or a rollback), with who did it and why.
type Event = queries.ReleaseEvent

// Way is a way back a release plan may approve.
type Way string

// The two ways back.
const (
	// WayPrevious makes active again the release that was active before the current one.
	WayPrevious Way = "previous"
	// WayFanoutOff keeps the version and sends no fan-out messages, one check at a time.
	WayFanoutOff Way = "fanout-off"
)

// Ways lists the ways back in the order they are shown.
var Ways = []Way{WayPrevious, WayFanoutOff}

// Event actions, as stored in release_events.action.
const (
	ActionDeploy     = "deploy"
	ActionToPrevious = "to-previous"
	ActionFanoutOff  = "fanout-off"
)

// Release kinds, as stored in releases.kind.
const (
	// KindDeploy is a release recorded with `deploy record`.
	KindDeploy = "deploy"
	// KindFanoutOff is a copy of a release with fan-out switched off, made by a rollback.
	KindFanoutOff = "fanout-off"
)

// Finish modes a release may ship (the probe's finish path).
const (
	FinishTx           = settings.FinishTx
	FinishAdvanceFirst = settings.FinishAdvanceFirst
)

// Settings are the round settings a release carries (probe/settings: Carried); `run round` takes
// its defaults from them.
type Settings = settings.Carried

// insertParams is the row that records r as a new active release, as of now (nil: the database's
// now()). Record and the fanout-off rollback both insert through it, so a release's columns are
// listed once.
func insertParams(r Release, now *time.Time) queries.InsertReleaseParams {
	return queries.InsertReleaseParams{
		Version: r.Version, Carried: r.Carried, WaysBack: r.WaysBack, Note: r.Note, DeployedBy: r.DeployedBy,
		Kind: r.Kind, PreviousID: r.PreviousID, DerivedFrom: r.DerivedFrom, Active: true, Now: now,
	}
}

// FanoutOff is what the fanout-off way back runs: the same settings, no fan-out messages, one
// check at a time.
func FanoutOff(s Settings) Settings {
	s.Fanout, s.Concurrency = 0, 1
	return s
}

// IsFanoutOff says whether the settings already are the fanout-off ones.
func IsFanoutOff(s Settings) bool { return s.Fanout == 0 && s.Concurrency == 1 }

// ParseWays parses a comma-separated list of ways back ("previous,fanout-off"); "none" or the
// empty string approves none. The result is in canonical order without repeats, never nil.
func ParseWays(s string) ([]Way, error) {
	out := []Way{}
	if strings.TrimSpace(s) == WaysNone {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		w := Way(part)
		if !slices.Contains(Ways, w) {
			return nil, fmt.Errorf("unknown way back %q: use previous, fanout-off, both, or none", part)
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b Way) int { return slices.Index(Ways, a) - slices.Index(Ways, b) })
	return out, nil
}

// WaysNone is how a person approves no way back (deploy record --ways-back none).
const WaysNone = "none"

// Approves says whether the release's plan approved that way back.
func Approves(r Release, w Way) bool { return slices.Contains(r.WaysBack, string(w)) }

func waysStrings(ways []Way) []string {
	out := make([]string, 0, len(ways))
	for _, w := range ways {
		out = append(out, string(w))
	}
	return out
}
