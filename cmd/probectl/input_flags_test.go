package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/release"
)

// Every input a domain error names is said as a flag that some command has: a renamed flag
// cannot leave an error pointing at one that no longer exists.
func TestEveryInputIsSaidAsAFlagACommandHas(t *testing.T) {
	t.Parallel()
	flags := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { flags[f.Name] = true })
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(newFactory(nil, testEnv(t), buildInfo{})))
	for name, flag := range inputFlags {
		assert.True(t, flags[flag], "input %q is said as --%s, which no command has", name, flag)
	}
}

func TestADomainErrorIsSaidInFlagsKeepingItsContextTypeAndExitCode(t *testing.T) {
	t.Parallel()
	text := input.Errorf("pass %s or %s", release.InputToPrevious, release.InputFanoutOff)
	assert.Equal(t, "pass to_previous or fanout_off", text.Error(), "the domain's own words")
	err := sayInputs(exit.UsageError(fmt.Errorf("plan rollback: %w", text)))
	assert.EqualError(t, err, "plan rollback: pass --to-previous or --fanout-off")
	assert.Equal(t, exit.Usage, exit.Code(err))
	var got *input.Text
	require.ErrorAs(t, err, &got)

	joined := sayInputs(errors.Join(input.Errorf("%s: must not be empty", release.InputVersion),
		input.Errorf("%s: must not be empty", release.InputActor)))
	assert.EqualError(t, joined, "--version: must not be empty\n--actor: must not be empty")

	plain := errors.New("no input named")
	assert.Same(t, plain, sayInputs(plain))
	assert.NoError(t, sayInputs(nil))
}

// The hints of probe's and attest's errors name the flag that would change the outcome.
func TestHintsNameTheFlagThatWouldHelp(t *testing.T) {
	t.Parallel()
	url, _ := migratedDB(t)
	dir := t.TempDir()

	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	stray := filepath.Join(dir, "stray.key")
	require.NoError(t, attest.WritePrivateKey(stray, priv))
	res := runCLI(t, "--database-url", url, "run", "round", "--signing-key", stray, "--allow-private-targets")
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "or pass --unsigned\n")

	notDir := filepath.Join(dir, "not-a-dir")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	res = runCLI(t, "--database-url", url, "run", "round", "--unsigned", "--allow-private-targets", "--spool-dir", notDir)
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "not a directory (check --spool-dir or XDG_STATE_HOME)")

	res = runCLI(t, "--database-url", url, "keys", "generate", "--out", stray)
	assert.Equal(t, 2, res.Code, res.Stderr)
	assert.Contains(t, res.Stderr, "refusing to overwrite a key, choose another --out")
}
