package main

import (
	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/retention"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
	"github.com/probectl/probectl/release"
)

// inputFlags are the flags that give each input a domain package names in its errors: the domain
// says "rounds", the command line "--rounds". A setting (settings.Setting, said as an input.Name
// by settings.Error) has its flag in the field table or settingFlags instead (flagName).
var inputFlags = map[input.Name]string{
	release.InputRounds:     "rounds",
	release.InputWait:       "wait",
	release.InputWindow:     "window",
	release.InputMaxOkDrop:  "max-ok-drop",
	release.InputRelease:    "release",
	release.InputEvery:      "every",
	release.InputVersion:    "version",
	release.InputActor:      "actor",
	release.InputToPrevious: "to-previous",
	release.InputFanoutOff:  "fanout-off",
	release.InputForce:      "force",
	release.InputReason:     "reason",
	probe.InputUnsigned:     "unsigned",
	probe.InputSpoolDir:     "spool-dir",
	attest.InputKeyPath:     "out",
	audit.InputSince:        "since",
	audit.InputUntil:        "until",
	// audit.InputWindow is "window" too: release.InputWindow's entry says it.
	audit.InputSplitAt:       "split-at",
	audit.InputInFlight:      "in-flight",
	retention.InputKeep:      "keep",
	retention.InputForever:   "forever",
	retention.InputUnit:      "unit",
	queries.InputDatabaseURL: "database-url",
	keys.InputAt:             "at",
}

// flagOfInput is the flag that gives n, "--rounds", or that sets the setting n names,
// "--claim-limit"; an input without a flag is said as it is.
func flagOfInput(n input.Name) string {
	if name, ok := inputFlags[n]; ok {
		return "--" + name
	}
	return flagOf(settings.Setting(n))
}

// sayInputs says every input a domain error names (an *input.Text anywhere in err's chain: a
// settings.Error, a keys.FutureError and an audit.ParamError hold one) as the flag that gives it,
// in err's whole text; the result unwraps to err, so its type and exit code stay. Errors that name
// no input pass unchanged. Execute calls it once, for every command: it is the one way a domain's
// names become flags.
func sayInputs(err error) error {
	msg, ok := input.Say(err, flagOfInput)
	if !ok {
		return err
	}
	return &flagError{text: msg, err: err}
}
