package settings

import (
	"fmt"
	"net/url"
)

// DefaultContact is where an operator who sees probectl in their logs learns what it is and how
// to reach whoever runs it. A deployment should name its own page or address (deploy record
// --contact, run round --contact).
const DefaultContact = "https://github.com/probectl/probectl"

// maxContactBytes bounds the contact: it is sent in every request's User-Agent.
const maxContactBytes = 200

// ValidContact accepts an absolute http, https or mailto URL of at most 200 bytes, printable
// ASCII only (it goes into a header: a line break would inject one).
func ValidContact(contact string) error {
	if len(contact) > maxContactBytes {
		return fmt.Errorf("%d bytes, longer than %d", len(contact), maxContactBytes)
	}
	for _, c := range []byte(contact) {
		if c < 0x21 || c > 0x7e || c == '(' || c == ')' {
			return fmt.Errorf("must be printable ASCII without spaces or parentheses")
		}
	}
	u, err := url.Parse(contact)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "mailto") || (u.Host == "" && u.Opaque == "") {
		return fmt.Errorf("%q: must be an http, https or mailto URL", contact)
	}
	if u.User != nil {
		return fmt.Errorf("must not carry user info")
	}
	return nil
}
