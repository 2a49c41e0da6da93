package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/attest"
)

// printedCommands are the probectl command lines a demo's narration shows ("$ probectl ...", or
// "probectl ..." in --keep's instructions), each as the arguments a shell would pass: words,
// double-quoted strings (as %q writes them), a '#' comment cut off.
func printedCommands(t *testing.T, narration string) [][]string {
	t.Helper()
	var out [][]string
	for _, line := range strings.Split(narration, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "$ ")
		rest, ok := strings.CutPrefix(line, "probectl ")
		if !ok {
			continue
		}
		out = append(out, shellWords(t, rest))
	}
	return out
}

// shellWords splits a command line as sh would for the forms the demo prints, up to a comment,
// a pipe, a redirection or a ';'.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
		case quoted && c == '"':
			quoted = false
		case quoted:
			word.WriteByte(c)
		case c == '"':
			quoted, inWord = true, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '#' && !inWord, c == '|', c == '>', c == ';':
			i = len(line) // a comment, or what a pipe, a redirection or the next command does
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	require.False(t, quoted, "an unclosed quote in %q", line)
	if inWord {
		words = append(words, word.String())
	}
	return words
}

// requireCopyableCommands runs every command a demo printed, as a reader would copy it, against a
// database that refuses connections: each must get as far as connecting (exit 3), so that none
// has a flag, a value or a bound its command refuses (exit 2). The files the demo names (fleet.csv,
// demo.key) are stood in for by real ones; `probectl demo` itself only has its flags parsed.
func requireCopyableCommands(t *testing.T, narration string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"fleet.csv": writeFile(t, "fleet.csv", "slug,url,kind\nweather,https://weather.example/mcp,mcp\n"),
		"demo.key":  filepath.Join(dir, "demo.key"),
	}
	_, priv, err := attest.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, attest.WritePrivateKey(files["demo.key"], priv))

	commands := printedCommands(t, narration)
	require.NotEmpty(t, commands, "the narration shows its commands:\n%s", narration)
	url := refusedDatabaseURL(t)
	for _, args := range commands {
		for i, a := range args {
			if p, ok := files[a]; ok {
				args[i] = p
			}
		}
		if args[0] == "demo" { // runs a demo of its own, with no database: its flags parse
			res := runCLI(t, append(args, "--help")...)
			require.Equal(t, 0, res.Code, "probectl %s: %s", strings.Join(args, " "), res.Stderr)
			continue
		}
		res := cli{env: map[string]string{"USER": "ana"}}.run(t, append([]string{"--database-url", url}, args...)...)
		require.Equal(t, 3, res.Code, "the demo printed `probectl %s`, which fails when copied:\n%s",
			strings.Join(args, " "), res.Stderr)
		require.Contains(t, res.Stderr, "could not reach", "probectl %s", strings.Join(args, " "))
	}
}

func TestShellWordsReadsWhatTheDemoPrints(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"rollback", "--fanout-off", "--reason", `it "failed" here`, "--yes"},
		shellWords(t, `rollback --fanout-off --reason "it \"failed\" here" --yes   # a comment`))
	require.Equal(t, []string{"demo", "-o", "json"}, shellWords(t, `demo -o json | jq -c '.verify'`))
	require.Equal(t, [][]string{{"migrate"}, {"status"}},
		printedCommands(t, "1/7 starting\n    $ probectl migrate\n    applied 3\n  probectl status\n  psql x\n"))
}

func TestEveryCommandOfTheDemosWrittenOutputCanBeCopied(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/demo.md")
	require.NoError(t, err)
	requireCopyableCommands(t, string(doc))
}
