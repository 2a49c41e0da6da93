package check

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A long repetitive secret is redacted whole.
func TestRedactingALongRepetitiveSecret(t *testing.T) {
	t.Parallel()
	query := "?q=" + strings.Repeat("a", 64<<10)
	rec := &recorder{}
	rec.see(mustURL(t, "https://a.example/"+query))
	got := rec.redact(`Get "https://a.example/` + query + `": boom`)
	require.Equal(t, `Get "https://a.example/?q=redacted": boom`, got)
}

// Redaction costs time linear in the secrets' length because it always runs on strings.Replacer's
// trie. Given a single pair, strings.NewReplacer builds a Boyer-Moore finder instead, whose table
// takes time quadratic in a repetitive pattern's length (one query of 64 KB of "a" took about
// 4.5 s to redact); redactLocked adds a no-op pair so that it never does. The test names the
// algorithm the Replacer built, which does not depend on how loaded the machine is; the cost
// itself is measured, not asserted: BenchmarkRedactingARepetitiveSecret prints the ratio of
// redacting 4n bytes to n (about 4 on the trie, about 16 when quadratic).
func TestRedactionOfOneSecretRunsOnTheTrie(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	rec.see(mustURL(t, "https://a.example/?q="+strings.Repeat("a", 1<<10)))
	rec.redact("boom")
	require.NotNil(t, rec.replacer)
	// strings.Replacer builds its algorithm on the first Replace and keeps it in the field r.
	algorithm := reflect.ValueOf(rec.replacer).Elem().FieldByName("r")
	require.True(t, algorithm.IsValid() && !algorithm.IsNil(), "strings.Replacer keeps its algorithm in r: this test must follow the standard library")
	require.Equal(t, "*strings.genericReplacer", algorithm.Elem().Type().String(),
		"one secret must not get the single-string (Boyer-Moore) replacer")
}

// BenchmarkRedactingARepetitiveSecret redacts one secret of n and of 4n bytes of "a" (the
// replacer built, then used once) and reports how much longer 4n took: about 4 while redaction
// is linear.
func BenchmarkRedactingARepetitiveSecret(b *testing.B) {
	const n = 16 << 10
	redactOnce := func(size int) time.Duration {
		query := "?q=" + strings.Repeat("a", size)
		rec := &recorder{}
		rec.see(mustURL(b, "https://a.example/"+query))
		start := time.Now()
		rec.redact(`Get "https://a.example/` + query + `": boom`)
		return time.Since(start)
	}
	var small, large time.Duration
	for b.Loop() {
		small += redactOnce(n)
		large += redactOnce(4 * n)
	}
	b.ReportMetric(float64(large)/float64(small), "t(4n)/t(n)")
}
