package render

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstOfQuotesAtMostNAndCountsTheRest(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a, b", FirstOf([]string{"a", "b"}, 3, ", "))
	assert.Equal(t, "a, b, c", FirstOf([]string{"a", "b", "c"}, 3, ", "))
	assert.Equal(t, "a; b; and 2 more", FirstOf([]string{"a", "b", "c", "d"}, 2, "; "))
	assert.Empty(t, FirstOf(nil, 3, ", "))
}
