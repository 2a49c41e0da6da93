package probe

import (
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
)

// Settings are how a round runs: the one type of probe/settings, named here because every round
// takes them.
type Settings = settings.Settings

// Finish modes and triggers, as probe/settings names them.
const (
	FinishTx           = settings.FinishTx
	FinishAdvanceFirst = settings.FinishAdvanceFirst
	TriggerCron        = settings.TriggerCron
	TriggerManual      = settings.TriggerManual
)

// CheckConfig is the checker's configuration settings s ask for, so that every caller that runs a
// round checks with the same timeout, body cap, address policy and contact that the round records.
func CheckConfig(s Settings) check.Config {
	return check.Config{RequestTimeout: s.RequestTimeout.D(), MaxBodyBytes: s.MaxBodyBytes,
		AllowPrivate: s.AllowPrivateTargets, UserAgent: check.UserAgent(s.Version, s.Contact)}
}
