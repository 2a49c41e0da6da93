package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/alerts"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/queries"
)

func newAlertsCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts <command>",
		Short: "Server alerts: the policy, the events and their delivery",
		Long: `Each server has an alert state, kept by the database in the transaction that stores each of
its runs: unknown until enough checks, down after --down-after consecutive failed checks (default
2), up again after --up-after consecutive ok checks (default 1). A change of state, a changed tool
list and a changed auth status are events, written with the run (a transactional outbox) and
delivered to every receiver that wants them ('probectl receivers') by 'probectl worker', at least
once and retried for 24 h. A round where at least --storm-share per cent of the checks fail (and
that checked at least --storm-min servers) is degraded: its failures count toward no server's
threshold, and one prober.degraded event is sent instead. docs/alerts.md says more.

'alerts policy' shows the policy and 'alerts policy set' changes it; 'alerts list' shows the
events with their deliveries; 'alerts deliver' delivers what is pending once (for cron users
without a worker) and re-sends the open alerts to Alertmanager receivers.`,
		Example: `  probectl alerts policy
  probectl alerts policy set --down-after 3 --storm-share 60
  probectl alerts list --open
  probectl alerts list --since 24h -o json
  probectl alerts deliver`,
	}
	cmd.AddCommand(newAlertsPolicyCmd(f), newAlertsListCmd(f), newAlertsDeliverCmd(f))
	return cmd
}

// alertFlags are the flags that set each alert setting.
var alertFlags = map[alerts.Setting]string{
	alerts.SettingDownAfter:   "--down-after",
	alerts.SettingUpAfter:     "--up-after",
	alerts.SettingStormShare:  "--storm-share",
	alerts.SettingStormMin:    "--storm-min",
	alerts.SettingResendEvery: "--resend-every",
	alerts.SettingName:        "NAME",
	alerts.SettingURL:         "--url",
	alerts.SettingFormat:      "--format",
	alerts.SettingSecret:      "--secret-file",
	alerts.SettingEvents:      "--events",
}

// alertsError says an alerts error as the command line's words, with its exit code: bad input 2,
// an unknown or taken receiver name 2, anything else could not be done (3).
func alertsError(err error) error {
	var se *alerts.SettingError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return exit.UsageError(fmt.Errorf("%s: %s", alertFlags[se.Setting], se.Msg))
	case errors.Is(err, queries.ErrNoSuchReceiver), errors.Is(err, queries.ErrReceiverExists):
		return exit.UsageError(err)
	}
	return err
}
