package main

import "github.com/spf13/cobra"

var helpTopics = []struct{ name, short, long string }{
	{
		name:  "exit-codes",
		short: "What probectl's exit codes mean",
		long: `probectl exits with:

  0  everything worked (a round that ran, even with failed checks; a clean audit)
  1  a check or audit found a problem: deploy verify failed or was inconclusive;
     with --fail-on-found, audit duplicates found unexplained pairs, audit rate
     servers over the promise, audit open stale jobs (the report is printed first)
  2  bad usage or bad input: a bad flag (named), a bad import row (line named),
     a signing key that is not registered or is retired, a rollback that is not
     approved; nothing was changed
  3  the work could not be done: database unreachable, schema behind
     ('probectl migrate'), a claim, finish or signature that failed, a round
     interrupted (Ctrl-C, SIGTERM, SIGHUP), an active release of another version than
     this probectl (run round)`,
	},
	{
		name:  "environment",
		short: "Environment variables probectl reads",
		long: `PROBECTL_DATABASE_URL   PostgreSQL URL, used when --database-url is not given
DATABASE_URL            used when neither of the above is set
PROBECTL_READ_DATABASE_URL
                        PostgreSQL URL (a hot standby) for the commands that only
                        read: status, serve, audit, runs list|show, servers
                        list|show, deploy verify; used when --read-database-url
                        is not given. Unset: they use the database above
PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, ...
                        libpq variables, used when no URL is set at all
PROBECTL_SIGNING_KEY    path of the ed25519 private key that signs runs
NO_COLOR                any value turns colour off (as --no-color does)
PROBECTL_TZ             time zone of times in tables and text, used when --tz is
                        not given: an IANA name (Europe/Berlin), UTC or Local;
                        default UTC. JSON and CSV stay UTC whatever it says
PROBECTL_TEST_DATABASE_URL
                        tests only: a server to create throwaway databases on,
                        instead of starting a private PostgreSQL

Passwords in URLs are never printed: errors name the host and port only.
But a password given in --database-url is on the command line, which every user
of the machine can read ('ps', /proc): keep it out of there. Set
PROBECTL_DATABASE_URL without a password and put the password in a passfile,
~/.pgpass or the file PGPASSFILE (or the URL's passfile=) names, one line
host:port:database:user:password, mode 0600; pgx reads it as libpq does.`,
	},
}

func addHelpTopics(root *cobra.Command) {
	for _, t := range helpTopics {
		root.AddCommand(&cobra.Command{
			Use:   t.name,
			Short: t.short,
			Long:  t.long,
			// A help topic has no Run: cobra lists it under "Additional help topics".
		})
	}
}
