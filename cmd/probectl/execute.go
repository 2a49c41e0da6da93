package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

// Execute runs the command line and returns the process's exit code. It is the one place where
// errors become exit codes and where they are printed.
func Execute(ctx context.Context, args []string, io *render.Streams, getenv func(string) string) int {
	// Every byte any command writes passes render's one sanitizer (server text must not drive the
	// terminal), whatever the command did or forgot.
	io = io.Guard()
	defer io.Flush()
	f := newFactory(io, getenv, currentBuild())
	defer f.Close()
	root := newRootCmd(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exit.OK
	}
	err = withHints(sayInputs(classifyCobraError(err)))
	var silent *silentError
	if !errors.As(err, &silent) {
		fmt.Fprintf(io.ErrOut, "probectl: %s\n", err)
	}
	return exit.Code(err)
}

// silentError carries an exit code whose explanation the command already printed (a failed
// verify or an audit that found duplicates prints its report, then exits 1).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }
func (e *silentError) ExitCode() int { return e.code }

// classifyCobraError turns cobra's own untyped usage errors into usage errors.
func classifyCobraError(err error) error {
	var c exit.Coder
	if errors.As(err, &c) {
		return err
	}
	msg := err.Error()
	for _, prefix := range []string{"unknown command", "unknown flag", "unknown shorthand flag",
		"invalid argument", "required flag", "flag needs an argument", "if any flags in the group",
		"accepts ", "requires ", "bad flag syntax"} {
		if strings.HasPrefix(msg, prefix) || strings.Contains(msg, " "+prefix) {
			return exit.UsageError(err)
		}
	}
	return err
}
