package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/probe/worker"
	"github.com/probectl/probectl/release"
)

// settingFlags are the flags outside the field table that set a setting a domain package names
// (worker's --max-workers); the round settings' flags are the field table's (settings.Fields).
var settingFlags = map[settings.Setting]string{
	worker.SettingMaxWorkers: "max-workers",
}

// flagName is the flag that sets s, "claim-limit"; "" when none does.
func flagName(s settings.Setting) string {
	if f, ok := settings.Lookup(s); ok {
		return f.Flag
	}
	return settingFlags[s]
}

// flagOf is the flag that sets s, "--claim-limit"; a setting without a flag is said as it is.
func flagOf(s settings.Setting) string {
	if name := flagName(s); name != "" {
		return "--" + name
	}
	return string(s)
}

// changedSetting says whether the flag of a setting was given on the command line.
func changedSetting(changed func(flag string) bool) func(settings.Setting) bool {
	if changed == nil {
		return nil
	}
	return func(s settings.Setting) bool {
		name := flagName(s)
		return name != "" && changed(name)
	}
}

// addSettingFlags adds the flag of every row of the field table that keep says, bound to its
// field of s, with s's value as the default (run round: every row; deploy record: the carried
// ones).
func addSettingFlags(fl *pflag.FlagSet, s *settings.Settings, keep func(settings.Field) bool) {
	for _, f := range settings.Fields {
		if !keep(f) {
			continue
		}
		switch p := f.Ptr(s).(type) {
		case *int:
			fl.IntVar(p, f.Flag, *p, f.Usage)
		case *int64:
			fl.Int64Var(p, f.Flag, *p, f.Usage)
		case *settings.Duration:
			durationVar(fl, (*time.Duration)(p), f.Flag, p.D(), f.Usage)
		case *string:
			fl.StringVar(p, f.Flag, *p, f.Usage)
		case *bool:
			fl.BoolVar(p, f.Flag, *p, f.Usage)
		default:
			panic(fmt.Sprintf("setting %s: no flag for a value of type %T", f.Name, p))
		}
	}
}

// flagError is a domain error as a command says it (sayInputs, ignoreVersionHint); it unwraps to
// the domain's error, whose type and exit code it keeps.
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
		out = append(out, overrideJSON{Flag: flagName(o.Setting), Release: o.Release, Round: o.Round})
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
