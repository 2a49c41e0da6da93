package main

import (
	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
)

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "probectl <command> [flags]",
		Short: "Probe a directory of servers without ever checking one twice",
		Long: `probectl claims the servers of a public directory that are due, checks them concurrently
(MCP over streamable HTTP, or plain HTTP), records each check as a signed run, and gives
release managers and incident responders the tools to prove that no server was checked twice:
a read-only duplicate audit, post-deploy verification and a one-command rollback.

PostgreSQL is the only stateful part: every probectl process, on one machine or many,
coordinates through it. See 'probectl help environment' and 'probectl help exit-codes'.`,
		Example: `  # apply the schema, load the directory, run one round
  probectl migrate
  probectl servers import servers.csv
  probectl run round --signing-key probe.key

  # did anything get checked twice in the last day?
  probectl audit duplicates --since 24h`,
		Version:       f.Build.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if f.NoColor || f.Getenv("NO_COLOR") != "" {
				f.IO.NoColor = true
			}
			if err := refuseBadText(cmd, args); err != nil {
				return err
			}
			return f.resolveZone(cmd)
		},
	}
	root.SetVersionTemplate(versionLine(f.Build) + "\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return exit.UsageError(flagValueError(err))
	})
	pf := root.PersistentFlags()
	pf.StringVar(&f.DatabaseURL, "database-url", "", "PostgreSQL URL (else PROBECTL_DATABASE_URL, DATABASE_URL, PG* variables)")
	pf.StringVar(&f.ReadDatabaseURL, "read-database-url", "", "PostgreSQL URL of a hot standby for the commands that only read (else PROBECTL_READ_DATABASE_URL; default: --database-url)")
	pf.StringVarP(&f.Output, "output", "o", "table", "output format: table or json (audit and runs list also csv)")
	pf.BoolVar(&f.NoColor, "no-color", false, "never colour the output (also NO_COLOR)")
	pf.StringVar(&f.TZ, "tz", "", "time zone of times in tables and text: an IANA name, UTC or Local (else PROBECTL_TZ, else UTC; JSON stays UTC)")

	root.AddCommand(
		newVersionCmd(f),
		newMigrateCmd(f),
		newMaintainCmd(f),
		newServersCmd(f),
		newCheckCmd(f),
		newDeployCmd(f),
		newRollbackCmd(f),
		newKeysCmd(f),
		newRunCmd(f),
		newRunsCmd(f),
		newWorkerCmd(f),
		newAuditCmd(f),
		newStatusCmd(f),
		newServeCmd(f),
		newDemoCmd(f),
	)
	root.AddCommand(newAlertsCmd(f), newReceiversCmd(f)) // alerts (cmd/probectl/alerts*.go, receivers.go)
	addHelpTopics(root)
	addCompletions(root, f)
	root.AddCommand(newDocsCmd(root))
	refuseUnknownCommands(root)
	return root
}
