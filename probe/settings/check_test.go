package settings

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Check judges the settings it names, by their rows' checks and bounds, and no others.
func TestCheckJudgesOnlyTheSettingsItNames(t *testing.T) {
	t.Parallel()
	s := Default()
	s.Fanout = -1 // bad, and not named
	require.NoError(t, s.Check(RequestTimeout, MaxBody))
	for _, c := range []struct {
		set  func(*Settings)
		name Setting
		want string
	}{
		{func(s *Settings) { s.RequestTimeout = 0 }, RequestTimeout, "request_timeout: must be positive, got 0s"},
		{func(s *Settings) { s.RequestTimeout = Duration(2 * time.Minute) }, RequestTimeout,
			"request_timeout: 2m0s is out of bounds: must be between 1s and 1m"},
		{func(s *Settings) { s.MaxBodyBytes = MaxMaxBody + 1 }, MaxBody,
			"max_body_bytes: 8388609 is out of bounds: must be at most 8388608 (8 MiB)"},
	} {
		bad := s
		c.set(&bad)
		err := bad.Check(RequestTimeout, MaxBody)
		var se *Error
		require.True(t, errors.As(err, &se), "%s", c.name)
		require.Equal(t, c.name, se.Setting)
		require.EqualError(t, err, c.want)
	}
}
