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
