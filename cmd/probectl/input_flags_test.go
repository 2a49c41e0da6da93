package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// cannot leave an error pointing at one that no longer exists, and an input.Name (or a
// settings.Setting, which settings.Error says as one) declared in a domain package without an
// entry in the flag tables (inputFlags, the field table, settingFlags) cannot reach a user said as
// its domain name.
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
	declared := declaredInputs(t, filepath.Join("..", ".."))
	require.Contains(t, declared, "release.InputRounds", "the scan finds the domain's declarations")
	require.Contains(t, declared, "settings.ClaimLimit")
	require.Contains(t, declared, "worker.SettingMaxWorkers")
	for decl, name := range declared {
		flag, ok := strings.CutPrefix(flagOfInput(input.Name(name)), "--")
		if assert.True(t, ok, "%s (%q) has no flag in inputFlags, the field table or settingFlags: "+
			"an error naming it would say %q to the user", decl, name, name) {
			assert.True(t, flags[flag], "%s (%q) is said as --%s, which no command has", decl, name, flag)
		}
	}
}

// declaredInputs finds, in the module's source outside cmd/, every constant or variable declared
// as an input.Name or a settings.Setting with a literal value: "release.InputRounds" -> "rounds".
func declaredInputs(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "cmd", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := file.Name.Name
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || (gen.Tok != token.CONST && gen.Tok != token.VAR) {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				if !namesAnInput(pkg, vs.Type) {
					continue
				}
				for i, id := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						return err
					}
					out[pkg+"."+id.Name] = v
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// namesAnInput says whether a declared type, in package pkg, is input.Name or settings.Setting.
func namesAnInput(pkg string, typ ast.Expr) bool {
	switch e := typ.(type) {
	case *ast.Ident:
		return (pkg == "input" && e.Name == "Name") || (pkg == "settings" && e.Name == "Setting")
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && ((x.Name == "input" && e.Sel.Name == "Name") || (x.Name == "settings" && e.Sel.Name == "Setting"))
	}
	return false
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
