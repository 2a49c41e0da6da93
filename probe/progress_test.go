package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/probectl/probectl/probe/check"
)

func TestProgressCountsTheChecksThatWereNotOK(t *testing.T) {
	t.Parallel()
	p := Progress{Claimed: 3, InFlight: 3}
	p.finished(check.OutcomeOK)
	p.finished(check.OutcomeFailed)
	p.finished(check.OutcomeError)
	assert.Equal(t, Progress{Claimed: 3, InFlight: 0, Done: 3, NotOK: 2}, p)
}
