package main

import "github.com/spf13/cobra"

func newRunCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run <command>",
		Short: "Run the prober",
		Long: `Run the prober. 'run round' claims the servers that are due, checks them concurrently and
records a signed run for each, without ever checking a server twice.`,
		Example: `  probectl run round --signing-key probe.key
  probectl run round --dry-run`,
	}
	cmd.AddCommand(newRunRoundCmd(f, nil))
	return cmd
}
