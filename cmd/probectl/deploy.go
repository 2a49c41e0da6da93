package main

import (
	"fmt"
	"os/user"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

func newDeployCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deploy <command>",
		Short: "Record releases and verify the rounds after a deploy",
		Long: `The release manager's commands. 'deploy record' records the release a deploy ships (its round
settings and the ways back its plan approved) and makes it the active release, which 'run round'
then takes its defaults from. 'deploy list' shows the history: which release is active, and who
deployed or rolled back which release, when and why. 'deploy verify' reads back the first rounds
after the release and says pass, fail or inconclusive.

To go back, see 'probectl rollback'. The guide is docs/release.md.`,
		Example: `  probectl deploy record --ways-back previous,fanout-off --note "parallel rounds"
  probectl deploy verify --wait 15m
  probectl deploy list`,
	}
	cmd.AddCommand(
		newDeployRecordCmd(f),
		newDeployListCmd(f),
		newDeployVerifyCmd(f),
	)
	return cmd
}

// releaseJSON is the documented JSON shape of a release (docs/release.md).
type releaseJSON struct {
	ID      int64  `json:"id"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Active  bool   `json:"active"`
	// Carried are the round settings it ships, with the keys every settings JSON uses.
	settings.Carried
	WaysBack       []string   `json:"ways_back"`
	Note           string     `json:"note"`
	DeployedAt     time.Time  `json:"deployed_at"`
	DeployedBy     string     `json:"deployed_by"`
	PreviousID     *int64     `json:"previous_id"`
	DerivedFrom    *int64     `json:"derived_from"`
	RolledBackAt   *time.Time `json:"rolled_back_at"`
	RolledBackBy   *string    `json:"rolled_back_by"`
	RollbackReason *string    `json:"rollback_reason"`
}

func toReleaseJSON(r release.Release) releaseJSON {
	ways := r.WaysBack
	if ways == nil {
		ways = []string{}
	}
	return releaseJSON{
		ID: r.ID, Version: r.Version, Kind: r.Kind, Active: r.Active, Carried: r.Carried.WithDefaults(),
		WaysBack: ways, Note: r.Note, DeployedAt: r.DeployedAt, DeployedBy: r.DeployedBy,
		PreviousID: r.PreviousID, DerivedFrom: r.DerivedFrom, RolledBackAt: r.RolledBackAt,
		RolledBackBy: r.RolledBackBy, RollbackReason: r.RollbackReason,
	}
}

// eventJSON is the documented JSON shape of one deploy or rollback.
type eventJSON struct {
	ID            int64     `json:"id"`
	At            time.Time `json:"at"`
	Action        string    `json:"action"`
	ReleaseID     int64     `json:"release_id"`
	FromReleaseID *int64    `json:"from_release_id"`
	Forced        bool      `json:"forced"`
	Actor         string    `json:"actor"`
	Reason        string    `json:"reason"`
}

func toEventJSON(e release.Event) eventJSON {
	return eventJSON{ID: e.ID, At: e.At, Action: e.Action, ReleaseID: e.ReleaseID,
		FromReleaseID: e.FromReleaseID, Forced: e.Forced, Actor: e.Actor, Reason: e.Reason}
}

// releaseName is how text output names a release: "#3 (v1.5.0)", "#4 (v1.5.0, fan-out off)".
func releaseName(r release.Release) string {
	if r.Kind == release.KindFanoutOff {
		return fmt.Sprintf("#%d (%s, fan-out off)", r.ID, r.Version)
	}
	return fmt.Sprintf("#%d (%s)", r.ID, r.Version)
}

// waysText shows approved ways back, "none" when there are none.
func waysText(ways []string) string {
	if len(ways) == 0 {
		return "none"
	}
	return strings.Join(ways, ",")
}

// settingsRows are the rows of a settings table: name and value, the carried settings in the
// field table's order.
func settingsRows(r release.Release) [][2]string {
	rows := [][2]string{{"version", r.Version}}
	s := settings.Settings{Carried: r.Carried.WithDefaults()}
	for _, f := range settings.CarriedFields() {
		rows = append(rows, [2]string{f.Label, f.Show(s)})
	}
	return append(rows, [2]string{"ways back", waysText(r.WaysBack)})
}

// showSetting is a carried setting of a release as tables show it (the field table's Show).
func showSetting(c settings.Carried, name settings.Setting) string {
	f, _ := settings.Lookup(name)
	return f.Show(settings.Settings{Carried: c.WithDefaults()})
}

// actorFrom is --actor, else $USER, else the name of the OS user running probectl (cron jobs and
// containers often have no $USER, and a release must still say who made it).
func actorFrom(f *factory, flag string) string {
	if flag != "" {
		return flag
	}
	if u := f.Getenv("USER"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
