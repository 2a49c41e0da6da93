package probe

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Batches of different sizes that fail for the same reason count as one cause: the wrapper that
// names a batch's size is not the cause (a broken connection was counted once per batch size).
func TestOneCauseOfFailedBatchesIsCountedOnceWhateverTheirSizes(t *testing.T) {
	t.Parallel()
	broken := errors.New("failed to receive message: unexpected EOF")
	causes := map[string]bool{}
	for _, n := range []int{3, 17, 500} {
		causes[batchCause(fmt.Errorf("finish %d jobs in one statement: %w", n, broken))] = true
	}
	require.Equal(t, map[string]bool{broken.Error(): true}, causes)
}
