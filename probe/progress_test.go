package probe

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/probectl/probectl/probe/check"
)

func TestProgressCountsTheChecksThatWereNotOK(t *testing.T) {
	t.Parallel()
	// Their checks have ended (each freed its slot); now their jobs are finished.
	p := Progress{Claimed: 3}
	p.finished(check.OutcomeOK)
	p.finished(check.OutcomeFailed)
	p.finished(check.OutcomeError)
	assert.Equal(t, Progress{Claimed: 3, InFlight: 0, Done: 3, NotOK: 2}, p)
}
