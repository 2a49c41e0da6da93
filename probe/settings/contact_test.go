package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAContactMustBeAShortURLThatCannotBreakTheHeader(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"https://probe.example/about", "mailto:probes@example.org", DefaultContact} {
		assert.NoError(t, ValidContact(good), good)
	}
	for _, bad := range []string{"probe.example", "ftp://probe.example/", "https://probe.example/\r\nX-Evil: 1",
		"https://probe.example/a b", "https://u:p@probe.example/", "https://probe.example/(x)",
		"https://probe.example/" + string(make([]byte, 200))} {
		assert.Error(t, ValidContact(bad), "%q", bad)
	}
}
