package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// oneOf names every value a setting takes, however many: a third finish mode or trigger would be
// named in its error (found in review: only the first two were, and one value alone panicked).
func TestOneOfNamesEveryValue(t *testing.T) {
	assert.Empty(t, oneOf("b", []string{"a", "b"}))
	assert.Equal(t, `must be a or b, got "x"`, oneOf("x", []string{"a", "b"}))
	assert.Equal(t, `must be a, b or c, got "x"`, oneOf("x", []string{"a", "b", "c"}))
	assert.Equal(t, `must be a, got "x"`, oneOf("x", []string{"a"}))
}
