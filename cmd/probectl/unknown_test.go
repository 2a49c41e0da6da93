package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A typo in a cron line must fail the cron job, not print help and succeed.
func TestAMistypedSubcommandOrHelpTopicExits2(t *testing.T) {
	t.Parallel()
	for _, args := range []string{"run rounds", "audit dupes", "deploy verfy", "keys gen", "servers lst",
		"help nonsense", "help run rounds", "nonsense"} {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, strings.Fields(args)...)
			assert.Equal(t, 2, res.Code)
			assert.Contains(t, res.Stderr, "unknown command")
			assert.Empty(t, res.Stdout, "no help on stdout")
		})
	}
}

func TestAGroupOrAHelpTopicStillShowsItsHelp(t *testing.T) {
	t.Parallel()
	for _, args := range []string{"run", "help run round", "help environment", "servers --help"} {
		t.Run(args, func(t *testing.T) {
			t.Parallel()
			res := runCLI(t, strings.Fields(args)...)
			assert.Equal(t, 0, res.Code, res.Stderr)
			assert.NotEmpty(t, res.Stdout)
		})
	}
}

func TestAMistypedSubcommandSuggestsTheRealOne(t *testing.T) {
	t.Parallel()
	res := runCLI(t, "run", "rounds")
	assert.Contains(t, res.Stderr, `unknown command "rounds" for "probectl run"; did you mean round?`)
}
