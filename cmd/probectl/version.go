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
		Long:  "Print the version, commit and build date that the release build stamped into this binary (dev when built by hand).",
		Example: `  probectl version
  probectl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := f.OutputFormat("table", "json")
			if err != nil {
				return err
			}
			if format == "json" {
				return render.JSON(f.IO.Out, f.Build)
			}
			_, err = fmt.Fprintln(f.IO.Out, versionLine(f.Build))
			return err
		},
	}
}
