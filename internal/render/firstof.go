package render

import (
	"fmt"
	"strings"
)

// FirstOf joins up to n of items with sep, and says how many more there are ("a, b, and 3 more"),
// for a message that must stay one line however many items it is about.
func FirstOf(items []string, n int, sep string) string {
	if len(items) <= n {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%sand %d more", strings.Join(items[:n], sep), sep, len(items)-n)
}
