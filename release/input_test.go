package release_test

import (
	"strings"

	"github.com/probectl/probectl/internal/input"
)

// asFlags is err's text with the inputs it names said as flags, the way the commands say them
// ("rounds" as "--rounds"; cmd/probectl's own table is tested there).
func asFlags(err error) string {
	if err == nil {
		return ""
	}
	dashed := func(n input.Name) string { return "--" + strings.ReplaceAll(string(n), "_", "-") }
	if msg, ok := input.Say(err, dashed); ok {
		return msg
	}
	return err.Error()
}
