package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/when"
)

// durationValue is every duration flag of probectl: it reads the grammar of internal/when (Go's
// units, after whole weeks and days: "90s", "10m", "1d", "2w", "1d12h") and shows its default
// the way tables show durations (render.Duration).
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := when.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return render.Duration(time.Duration(*d)) }

func (d *durationValue) Type() string { return "duration" }

// durationVar defines a duration flag with the one grammar; its bad values are usage errors
// naming the flag, as pflag words them.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*durationValue)(p), name, usage)
}

// mustBePositive refuses a zero duration for --name (the grammar already refuses negative ones).
func mustBePositive(name string, d time.Duration) error {
	if d <= 0 {
		return exit.UsageError(fmt.Errorf("--%s: must be positive, got %s", name, render.Duration(d)))
	}
	return nil
}

// flagValueError words a bad duration as every other bad flag value of probectl is worded,
// "--window: duration "ten": invalid duration", instead of pflag's "invalid argument ... for ...
// flag: ...". Other errors pass unchanged.
func flagValueError(err error) error {
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		if _, ok := bad.GetFlag().Value.(*durationValue); ok {
			return fmt.Errorf("--%s: %w", bad.GetFlag().Name, errors.Unwrap(bad))
		}
	}
	return err
}
