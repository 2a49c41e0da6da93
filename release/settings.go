package release

import (
	"github.com/probectl/probectl/probe"
)

// ValidateSettings checks round settings the way `run round` will: every setting, and the lease
// check (a job's worst case, every request at the timeout plus the round's budget plus the
// finish's own, must fit the in-flight window). Errors are *probe.SettingsError
// values naming the setting at fault (the command says its flag), with exit code 2.
func ValidateSettings(s Settings) error {
	return s.Apply(probe.DefaultSettings()).Validate()
}
