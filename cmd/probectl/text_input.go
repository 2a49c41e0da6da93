package main

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
)

// pathFlags name files or directories: a path on Linux may be any bytes, so they are not text.
var pathFlags = map[string]bool{
	"spool-dir": true, "signing-key": true, "out": true, "secret-file": true, "public-key": true,
	"pg-bin-dir": true, "dir": true, "archive-dir": true, "archive": true,
}

// fileArgCommands take files as their arguments (servers import FILE, keys register KEY_FILE,
// runs verify FILE...), not text.
var fileArgCommands = map[string]bool{
	"probectl servers import": true, "probectl keys register": true, "probectl runs verify": true,
}

// textBounds bound the free text a person writes into the history (releases, rollbacks, status
// changes, exports, retention), in characters: each is stored and shown in tables and pages. A
// status change's reason has the same bound (directory.MaxReasonChars).
var textBounds = map[string]int{"actor": 200, "version": 200, "reason": directory.MaxReasonChars, "note": 2000}

// refuseBadText refuses a flag's value or an argument that is not UTF-8 text, and free text over
// its bound (textBounds), naming it (exit 2), before the command connects to anything. PostgreSQL
// refuses bytes that are not UTF-8 in a text column: an --actor or a --note of them came back as
// a raw database error and exit 3, after whatever the command had written before it; and a
// --note of any length was stored and echoed whole. The value itself is not quoted: it may be a
// secret's.
func refuseBadText(cmd *cobra.Command, args []string) error {
	if cmd.Name() == cobra.ShellCompRequestCmd || cmd.Name() == cobra.ShellCompNoDescRequestCmd {
		return nil // a shell completing a word: what was typed so far is not yet input
	}
	var errs []error
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		v := fl.Value.String()
		switch {
		case pathFlags[fl.Name]:
		case !utf8.ValidString(v):
			errs = append(errs, fmt.Errorf("--%s: not valid UTF-8 text", fl.Name))
		case textBounds[fl.Name] > 0 && utf8.RuneCountInString(v) > textBounds[fl.Name]:
			errs = append(errs, fmt.Errorf("--%s: at most %d characters, got %d", fl.Name, textBounds[fl.Name], utf8.RuneCountInString(v)))
		}
	})
	if !fileArgCommands[cmd.CommandPath()] {
		for i, a := range args {
			if !utf8.ValidString(a) {
				errs = append(errs, fmt.Errorf("argument %d: not valid UTF-8 text", i+1))
			}
		}
	}
	if len(errs) > 0 {
		return exit.UsageError(errors.Join(errs...))
	}
	return nil
}
