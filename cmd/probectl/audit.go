package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/retention"
)

func newAuditCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit <command>",
		Short: "Read-only audits: duplicate claims, the request-rate promise, open jobs, tool changes",
		Long: `Answer from the database alone, without changing it, what incident responders ask: did any
server get checked twice, when, how close, and was it explained; did any operator get more than
one round of at most 8 requests per check interval; which jobs are still open, and which of those
are stale.

Every audit runs in one READ ONLY transaction and reads one snapshot: it works under a role that
has only SELECT on the tables, and on a hot standby. Times are RFC 3339 (2026-10-07T22:13:24Z) or
a duration back from now (90m, 24h, 7d).`,
		Example: `  probectl audit duplicates --since 24h
  probectl audit duplicates --since 2026-09-30T20:53:00Z --split-at 2026-10-07T20:53:00Z \
      --split-at 2026-10-07T22:13:24Z --until 2026-10-08T13:15:31Z
  probectl audit rate --since 7d --fail-on-found
  probectl audit open -o json
  probectl audit tools --since 7d --diff`,
	}
	cmd.AddCommand(
		newAuditDuplicatesCmd(f),
		newAuditRateCmd(f),
		newAuditOpenCmd(f),
		newAuditToolsCmd(f),
	)
	return cmd
}

// auditRange is the --since/--until pair the audits share.
type auditRange struct {
	Since, Until string
}

func (r *auditRange) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&r.Since, "since", "24h", "start of the population: RFC 3339 or a duration back from now (90m, 24h, 7d)")
	cmd.Flags().StringVar(&r.Until, "until", "", "end of the population, excluded: RFC 3339 or a duration back from now (default: now)")
}

// parse reads the flags against now; a zero Until means the database's now().
func (r *auditRange) parse(now time.Time) (since, until time.Time, err error) {
	if since, err = parseTimeFlag("since", r.Since, now); err != nil {
		return since, until, err
	}
	if r.Until != "" {
		if until, err = parseTimeFlag("until", r.Until, now); err != nil {
			return since, until, err
		}
		if !since.Before(until) {
			return since, until, exit.UsageError(fmt.Errorf("--since %s is not before --until %s",
				since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano)))
		}
	}
	return since, until, nil
}

// auditError is a domain ParamError as bad input (exit 2), without the context it was wrapped in:
// Execute says its parameters as flags ("--since: ..."), so it reads like a bad flag.
func auditError(err error) error {
	var pe *audit.ParamError
	if errors.As(err, &pe) {
		return exit.UsageError(pe)
	}
	return prunedWindowError(err)
}

// prunedWindowError marks a window reaching before the oldest kept runs as bad input (exit 2).
func prunedWindowError(err error) error {
	var we *retention.WindowError
	if errors.As(err, &we) {
		return exit.UsageError(err)
	}
	return err
}

func millisOr(io *render.Streams, t *time.Time, missing string) string {
	if t == nil {
		return missing
	}
	return io.TimeMillis(*t)
}

func durationOr(d *time.Duration, missing string) string {
	if d == nil {
		return missing
	}
	return render.Duration(*d)
}

// failIfFound turns a finding into exit 1 once the report is out (--fail-on-found).
func failIfFound(err error, found bool) error {
	if err == nil && found {
		return &silentError{code: exit.Found}
	}
	return err
}
