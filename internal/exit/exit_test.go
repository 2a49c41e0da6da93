package exit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCodeFollowsTheOutermostMarkAndDefaultsToUnavailable(t *testing.T) {
	t.Parallel()
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"nil is success", nil, OK},
		{"an unmarked error could not do the work", base, Unavailable},
		{"a usage error is 2 even when wrapped", fmt.Errorf("ctx: %w", UsageError(base)), Usage},
		{"a finding is 1", FoundError(base), Found},
		{"the outermost mark wins", UsageError(UnavailableError(base)), Usage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Code(tc.err))
		})
	}
}
