package check

import (
	"fmt"

	"github.com/probectl/probectl/probe/settings"
)

// DefaultContact is where an operator who sees probectl in their logs learns what it is and how
// to reach whoever runs it (the contact setting's default: probe/settings).
const DefaultContact = settings.DefaultContact

// UserAgent is what every request of a check names itself: probectl, its version, and a contact
// URL, as polite crawlers do ("probectl/v1.2.0 (+https://probe.example/about)").
func UserAgent(version, contact string) string {
	if contact == "" {
		contact = DefaultContact
	}
	return fmt.Sprintf("probectl/%s (+%s)", version, contact)
}
