package check

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Redaction costs time linear in the secrets' length. With a single secret, strings.NewReplacer
// builds a Boyer-Moore table in time quadratic in a repetitive pattern's length: one query of
// 64 KB of "a" took about 4.5 s to redact (8 KB: 22 ms per check, about 0.1 s under the race
// detector); on the trie it takes well under a millisecond. The bound leaves a wide margin for a
// loaded machine and the race detector.
func TestRedactingALongRepetitiveSecretTakesLinearTime(t *testing.T) {
	t.Parallel()
	query := "?q=" + strings.Repeat("a", 64<<10)
	rec := &recorder{}
	rec.see(mustURL(t, "https://a.example/"+query))
	start := time.Now()
	got := rec.redact(`Get "https://a.example/` + query + `": boom`)
	elapsed := time.Since(start)
	require.Equal(t, `Get "https://a.example/?q=redacted": boom`, got)
	require.Less(t, elapsed, time.Second, "redacting one 64 KB secret")
}
