package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/probectl/probectl/queries"
)

func TestASummaryWithMoreJobsThanServersSaysAServerWasClaimedTwice(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		jobs, servers int
		want          bool
	}{
		{"one job per server", 3, 3, false},
		{"an empty round", 0, 0, false},
		{"two jobs on one of two servers", 3, 2, true},
	}
	for _, tc := range cases {
		s := &Summary{RoundCounts: queries.RoundCounts{Jobs: tc.jobs, Servers: tc.servers}}
		assert.Equal(t, tc.want, s.ClaimedTwice(), tc.name)
	}
}
