package retention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// MinKeep is the shortest retention: a prune never reaches into the last 2 days, and a day more
// leaves a whole partition between.
const MinKeep = 72 * time.Hour

// SettingError says a retention setting is out of its bounds (bad input: exit 2).
type SettingError struct {
	Reason string
	text   *input.Text // Reason with its inputs kept apart; nil: none
}

// The inputs SettingError names (see internal/input), as the commands' flags give them.
const (
	InputKeep    input.Name = "keep"
	InputForever input.Name = "forever"
	InputUnit    input.Name = "unit"
)

func settingError(format string, args ...any) *SettingError {
	t := input.Errorf(format, args...)
	return &SettingError{Reason: t.Error(), text: t}
}

func (e *SettingError) Error() string { return e.Reason }

// Unwrap is the reason, whose inputs a command says as its flags (nil when none was kept).
func (e *SettingError) Unwrap() error {
	if e.text == nil {
		return nil
	}
	return e.text
}

// Change is a change of the retention setting, as 'runs retention set' gives it.
type Change struct {
	// Keep is how long runs are kept; nil leaves it as it is, unless Forever.
	Keep *time.Duration
	// Forever keeps runs for ever (Keep nil).
	Forever bool
	// Unit is the span of the partitions made from then on, "day" or "week"; "" leaves it.
	Unit string
}

// Set makes the change c as who, in one statement: what it leaves as it is is never read and
// written back, so a change made meanwhile by another stands.
func Set(ctx context.Context, db queries.DBTX, c Change, who string) (queries.Retention, error) {
	if err := CheckChange(c); err != nil {
		return queries.Retention{}, err
	}
	if c.Keep == nil && !c.Forever {
		return queries.SetRetentionUnit(ctx, db, c.Unit, who)
	}
	return queries.SetRetention(ctx, db, c.Keep, c.Unit, who)
}

// CheckChange judges a change as Set does, without a database (a *SettingError: bad input): it
// says something (a keep, for ever, or a unit), not both a keep and for ever, and its keep and
// unit are within bounds (CheckSetting). A command calls it before it connects.
func CheckChange(c Change) error {
	if c.Keep == nil && !c.Forever && c.Unit == "" {
		return settingError("give %s DURATION or %s (or %s)", InputKeep, InputForever, InputUnit)
	}
	if c.Keep != nil && c.Forever {
		return settingError("%s and %s: give one", InputKeep, InputForever)
	}
	return CheckSetting(c.Keep, c.Unit)
}

// CheckSetting judges a retention setting as Set does, without a database: a command calls it
// before it connects, so that bad input exits 2 whether or not the database answers.
func CheckSetting(keep *time.Duration, unit string) error {
	if keep != nil && *keep < MinKeep {
		return settingError("%s %s: at least %s (prune never reaches the last 2 days)", InputKeep,
			render.Duration(*keep), render.Duration(MinKeep))
	}
	if unit != "" && unit != "day" && unit != "week" {
		return settingError("%s %q: day or week", InputUnit, unit)
	}
	return nil
}

// Get reads the retention setting.
func Get(ctx context.Context, db queries.DBTX) (queries.Retention, error) {
	return queries.GetRetention(ctx, db)
}

// AutoResult is what the worker's daily retention did.
type AutoResult struct {
	Export *queries.Export
	Pruned []Pruned
}

// Auto applies the retention setting, as the worker's daily job does: when runs are kept for a
// time, it exports the runs before the day that time reaches back to (from where the last
// automatic export ended) into dir, then prunes what the exports cover. Nothing when runs are kept
// for ever or when dir is "" (no place for the archives: nothing is pruned without one).
func Auto(ctx context.Context, db queries.DB, now time.Time, dir string) (AutoResult, error) {
	set, err := queries.GetRetention(ctx, db)
	if err != nil || set.Keep == nil || dir == "" {
		return AutoResult{}, err
	}
	before := now.UTC().Add(-*set.Keep).Truncate(24 * time.Hour)
	ranges, err := queries.PrunablePartitions(ctx, db, before)
	if err != nil || len(ranges) == 0 {
		return AutoResult{}, err
	}
	var res AutoResult
	if ranges[0].ExportID == nil || ranges[len(ranges)-1].ExportID == nil {
		path := filepath.Join(dir, "runs-before-"+before.Format(time.DateOnly)+".jsonl.gz")
		e, err := archive.Export(ctx, db, archive.Request{Path: path, Before: before, From: ranges[0].RangeFrom, Who: "probectl worker"})
		if errors.Is(err, archive.ErrExists) {
			return res, fmt.Errorf("retention: %s exists but is not recorded as covering the runs to prune; check it, move it away: %w", path, err)
		}
		if err != nil {
			return res, err
		}
		res.Export = &e
	}
	res.Pruned, err = Prune(ctx, db, Request{Before: before, Now: now})
	return res, err
}

// CheckArchiveDir says whether dir can take archives (exists, is a directory).
func CheckArchiveDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
