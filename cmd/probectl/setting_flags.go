package main

import (
	"errors"
	"fmt"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/worker"
	"github.com/probectl/probectl/release"
)

// settingFlags are the flags (run round, deploy record, worker) that set each setting: the domain
// packages name settings, and the commands say them as the flags a person typed.
var settingFlags = map[probe.Setting]string{
	probe.SettingFanout:         "fanout",
	probe.SettingClaimLimit:     "claim-limit",
	probe.SettingConcurrency:    "concurrency",
	probe.SettingMinSpacing:     "min-spacing",
	probe.SettingMaxDuration:    "max-duration",
	probe.SettingRequestTimeout: "request-timeout",
	probe.SettingMaxBody:        "max-body",
	probe.SettingFinish:         "finish",
	probe.SettingTrigger:        "trigger",
	probe.SettingContact:        "contact",
	worker.SettingMaxWorkers:    "max-workers",
}

// flagOf is the flag that sets s, "--claim-limit"; a setting without a flag is said as it is.
func flagOf(s probe.Setting) string {
	if name, ok := settingFlags[s]; ok {
		return "--" + name
	}
	return string(s)
}

// changedSetting says whether the flag of a setting was given on the command line.
func changedSetting(changed func(flag string) bool) func(probe.Setting) bool {
	if changed == nil {
		return nil
	}
	return func(s probe.Setting) bool {
		name, ok := settingFlags[s]
		return ok && changed(name)
	}
}

// inFlagWords says every *probe.SettingsError in err with the flags of the command line, keeping
// err's shape (joined errors stay joined, exit codes stay); other errors pass unchanged.
func inFlagWords(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *probe.SettingsError:
		return &flagError{text: e.Say(flagOf), err: e}
	case *exit.Error:
		return &exit.Error{Code: e.Code, Err: inFlagWords(e.Err)}
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		out := make([]error, len(errs))
		for i, one := range errs {
			out[i] = inFlagWords(one)
		}
		return errors.Join(out...)
	}
	return err
}

// flagError is a settings error as a command says it; it unwraps to the domain's error, whose
// exit code it keeps.
type flagError struct {
	text string
	err  error
}

func (e *flagError) Error() string { return e.text }

func (e *flagError) Unwrap() error { return e.err }

// overrideJSON is the documented JSON shape of an override in 'run round -o json'.
type overrideJSON struct {
	Flag    string `json:"flag"`
	Release string `json:"release"`
	Round   string `json:"round"`
}

func toOverridesJSON(overrides []release.Override) []overrideJSON {
	out := make([]overrideJSON, 0, len(overrides))
	for _, o := range overrides {
		out = append(out, overrideJSON{Flag: settingFlags[o.Setting], Release: o.Release, Round: o.Round})
	}
	return out
}

// ignoreVersionHint adds run round's way past a release of another version to its refusal.
func ignoreVersionHint(err error) error {
	var mismatch *release.VersionMismatchError
	if errors.As(err, &mismatch) {
		return &flagError{text: fmt.Sprintf("%s, or pass --ignore-version if you really mean to probe with this binary",
			err), err: err}
	}
	return err
}
