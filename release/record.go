package release

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// RecordRequest is a release to record.
type RecordRequest struct {
	Version  string
	Settings Settings
	WaysBack []Way
	// DefaultWaysBack: no ways back were given (WaysBack is ignored then). Record approves
	// WayPrevious when there is a previous release to go back to, none for a first release, and
	// says so in Recorded.WaysBackDefaulted.
	DefaultWaysBack bool
	Note            string
	// Every is how often `probectl worker` starts a round of this release (0: no schedule; rounds
	// run only by hand). Between MinEvery and MaxEvery.
	Every time.Duration
	// Actor is who deployed it ($USER or --actor).
	Actor string
	// Now, when set, stands in for the database's now() (tests fix the clock with it).
	Now *time.Time
	// DryRun records the release in a transaction that is rolled back: what would be recorded,
	// and nothing changed.
	DryRun bool
}

// errRecordDryRun rolls back a dry run's transaction.
var errRecordDryRun = errors.New("dry run: roll back")

// Recorded is a release just recorded, and the release it replaced (nil for the first).
type Recorded struct {
	Release  Release
	Replaced *Release
	Event    Event
	// WaysBackDefaulted: no ways back were given and the release approves WayPrevious by default.
	WaysBackDefaulted bool
}

// Record validates the request and makes it the active release, in one transaction: the old
// release is deactivated and the new one inserted with it as its previous release, so that
// `rollback --to-previous` knows where to go.
func Record(ctx context.Context, pool queries.DB, req RecordRequest) (*Recorded, error) {
	if err := exit.UsageError(req.validate()); err != nil {
		return nil, err
	}
	var out *Recorded
	err := queries.InTx(ctx, pool, func(tx pgx.Tx) error {
		out = &Recorded{}
		if err := queries.LockReleases(ctx, tx); err != nil {
			return err
		}
		var seqs queries.ReleaseSequences
		if req.DryRun {
			// A dry run shows the number the release will get, so it must not use it up: the
			// sequences are put back before its transaction rolls back.
			var err error
			if seqs, err = queries.ReadReleaseSequences(ctx, tx); err != nil {
				return err
			}
		}
		old, err := queries.ActiveReleaseForUpdate(ctx, tx)
		switch {
		case errors.Is(err, queries.ErrNoRelease):
		case err != nil:
			return err
		default:
			out.Replaced = &old
			if err := queries.DeactivateRelease(ctx, tx, old.ID); err != nil {
				return err
			}
		}
		ways := req.WaysBack
		if req.DefaultWaysBack {
			ways = nil
			if out.Replaced != nil {
				ways, out.WaysBackDefaulted = []Way{WayPrevious}, true
			}
		}
		rel := Release{Version: req.Version, Carried: req.Settings, WaysBack: waysStrings(ways), Note: req.Note,
			DeployedBy: req.Actor, Kind: KindDeploy}
		if out.Replaced != nil {
			rel.PreviousID = &out.Replaced.ID
		}
		id, err := queries.InsertRelease(ctx, tx, insertParams(rel, req.Now))
		if err != nil {
			return err
		}
		if req.Every > 0 {
			if err := queries.SetReleaseEvery(ctx, tx, id, req.Every); err != nil {
				return err
			}
		}
		ev := Event{ReleaseID: id, Action: ActionDeploy, Actor: req.Actor, Reason: req.Note}
		if out.Replaced != nil {
			ev.FromReleaseID = &out.Replaced.ID
		}
		if out.Event, err = queries.InsertReleaseEvent(ctx, tx, ev, req.Now); err != nil {
			return err
		}
		if out.Release, err = queries.GetRelease(ctx, tx, id); err != nil {
			return err
		}
		if req.DryRun {
			if err := queries.RestoreReleaseSequences(ctx, tx, seqs); err != nil {
				return err
			}
			return errRecordDryRun
		}
		return nil
	})
	if req.DryRun && errors.Is(err, errRecordDryRun) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("record release %s: %w", req.Version, err)
	}
	return out, nil
}

// ValidateRecord checks a request before anything connects: bad input, exit 2, naming the flag.
// The bounds are the command's, not Record's: the incident replay records the old settings on its
// own throwaway database.
func ValidateRecord(req RecordRequest) error {
	if err := roundOf(req.Settings).CheckBounds(); err != nil {
		return exit.UsageError(errors.Join(err, req.validate()))
	}
	return exit.UsageError(req.validate())
}

// roundOf is a round of the binary's defaults with the release's carried settings: how `run round`
// checks what a release ships.
func roundOf(c Settings) settings.Settings {
	s := settings.Default()
	s.Carried = c
	return s
}

func (req RecordRequest) validate() error {
	if err := roundOf(req.Settings).Validate(); err != nil {
		return err
	}
	if req.Every != 0 && (req.Every < MinEvery || req.Every > MaxEvery) {
		return input.Errorf("%s: must be between %s and %s, got %s", InputEvery, MinEvery, MaxEvery, req.Every)
	}
	if req.Version == "" {
		return input.Errorf("%s: must not be empty", InputVersion)
	}
	if req.Actor == "" {
		return input.Errorf("%s: must not be empty ($USER is not set either)", InputActor)
	}
	return nil
}
