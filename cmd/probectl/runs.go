package main

import (
	"github.com/spf13/cobra"

	"github.com/probectl/probectl/probe"
)

func newRunsCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs <command>",
		Short: "Work with stored runs and the results waiting to be stored",
		Long: `Work with runs, the signed observations a round stores. 'runs recover' stores the results a
round checked but could not store (the database was unreachable), which wait in the local spool.`,
		Example: `  probectl runs recover`,
	}
	cmd.AddCommand(newRunsRecoverCmd(f))
	return cmd
}

// spoolDir is --spool-dir, else $XDG_STATE_HOME/probectl, else ~/.local/state/probectl.
func spoolDir(f *factory, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	return probe.DefaultSpoolDir(f.Getenv)
}
