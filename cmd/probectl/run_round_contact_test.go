package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A contact that is not a URL, or would break the User-Agent header, is refused before connecting.
func TestRunRoundRefusesABadContact(t *testing.T) {
	t.Parallel()
	const nowhere = "postgres://probe@127.0.0.1:1/probe"
	for _, contact := range []string{"probes at example", "https://probe.example/\r\nX-Evil: 1", "ftp://probe.example/"} {
		res := runCLI(t, "--database-url", nowhere, "run", "round", "--unsigned", "--contact", contact)
		assert.Equal(t, 2, res.Code, res.Stderr)
		assert.Contains(t, res.Stderr, "--contact: ")
	}
}
