package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// maintain --from has bounds, judged before anything is connected to (no database here: exit 3
// once in bounds): not after today (taken for today, silently: "nothing to do") and at most ten
// years back (1900-01-01 asked for 92,714 partitions).
func TestMaintainFromIsRefusedOutsideItsBounds(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC()
	for _, tc := range []struct {
		from string
		want string
	}{
		{"1900-01-01", "--from 1900-01-01: at most 10 years back"},
		{today.AddDate(-11, 0, 0).Format(time.DateOnly), "at most 10 years back"},
		{today.AddDate(0, 0, 2).Format(time.DateOnly), "after today"},
		{"2099-01-01", "--from 2099-01-01: after today"},
	} {
		res := runCLI(t, "maintain", "--dry-run", "--from", tc.from)
		require.Equal(t, 2, res.Code, "%s: %s", tc.from, res.Stderr)
		require.Contains(t, res.Stderr, tc.want)
	}
	for _, from := range []string{today.Format(time.DateOnly), today.AddDate(-9, 0, 0).Format(time.DateOnly)} {
		res := runCLI(t, "maintain", "--dry-run", "--from", from)
		require.Equal(t, 3, res.Code, "%s is in bounds: %s", from, res.Stderr)
	}
}
