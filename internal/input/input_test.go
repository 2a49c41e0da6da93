package input_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/probectl/probectl/internal/input"
)

const rounds input.Name = "rounds"

func flag(n input.Name) string { return "--" + string(n) }

func TestATextSaysItsInputsTheCallersWayAndKeepsWhatItWraps(t *testing.T) {
	t.Parallel()
	cause := errors.New("file exists")
	text := input.Errorf("%s %d: must be at least 1 (%w)", rounds, 0, cause)
	assert.EqualError(t, text, "rounds 0: must be at least 1 (file exists)")
	assert.Equal(t, "--rounds 0: must be at least 1 (file exists)", text.Say(flag))
	assert.ErrorIs(t, text, cause)

	wrapped := fmt.Errorf("verify: %w", errors.Join(errors.New("first"), text))
	said, ok := input.Say(wrapped, flag)
	assert.True(t, ok)
	assert.Equal(t, "verify: first\n--rounds 0: must be at least 1 (file exists)", said)

	_, ok = input.Say(errors.New("no input"), flag)
	assert.False(t, ok)
	_, ok = input.Say(nil, flag)
	assert.False(t, ok)
}
