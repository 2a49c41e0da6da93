package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
)

// refuseUnknownCommands makes a mistyped subcommand an error (exit 2) instead of the group's
// help with exit 0: 'probectl run rounds' in a cron line must fail loudly, not never probe.
// A group given no subcommand still shows its help.
func refuseUnknownCommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 {
					return unknownCommand(cmd, args[0])
				}
				return cmd.Help()
			}
		}
		refuseUnknownCommands(c)
	}
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command or topic",
		Long:  "Help shows the help of any command or help topic ('probectl help environment').",
		Example: `  probectl help run round
  probectl help exit-codes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := cmd.Root().Find(args)
			if err != nil || target == nil {
				return exit.UsageError(fmt.Errorf("unknown command or help topic %q for \"probectl help\"", strings.Join(args, " ")))
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest[0])
			}
			return target.Help()
		},
	})
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, set only on its root's path
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return exit.UsageError(fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath()))
}
