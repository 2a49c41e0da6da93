package main

import (
	"fmt"
	"time"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/when"
)

// parseTimeFlag reads --name as an RFC 3339 time or a duration back from now; bad input is a
// usage error naming the flag.
func parseTimeFlag(name, value string, now time.Time) (time.Time, error) {
	t, err := when.Parse(value, now)
	if err != nil {
		return time.Time{}, exit.UsageError(fmt.Errorf("--%s: %w", name, err))
	}
	return t, nil
}

// positiveDuration reads --name as a duration (Go's syntax, optionally starting with days: "7d",
// "1d12h") that must be above zero; bad input is a usage error naming the flag.
func positiveDuration(name, value string) (time.Duration, error) {
	d, err := when.ParseDuration(value)
	if err != nil {
		return 0, exit.UsageError(fmt.Errorf("--%s: %w", name, err))
	}
	if d <= 0 {
		return 0, exit.UsageError(fmt.Errorf("--%s: must be positive, got %q", name, value))
	}
	return d, nil
}
