package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/render"
)

func versionLine(b buildInfo) string {
	return fmt.Sprintf("probectl %s (commit %s, built %s)", b.Version, b.Commit, b.Date)
}

func newVersionCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date",
		Long: `Print the version, commit and build date of this binary.

A release build stamps them. A binary built with 'go install <module>/cmd/probectl@v1.2.3' says
the module's version; one built with 'go build' in a checkout says the commit it was built from
(the first 7 hex digits, with -dirty when the tree had changes) and that commit's time. "dev"
and "none" mean nobody recorded anything.`,
		Example: `  probectl version
  probectl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.OutputFormat("table", "json")
			if err != nil {
				return err
			}
			return render.Output(f.IO.Out, format, render.View{JSON: f.Build, Text: func() error {
				_, err := fmt.Fprintln(f.IO.Out, versionLine(f.Build))
				return err
			}})
		},
	}
}
