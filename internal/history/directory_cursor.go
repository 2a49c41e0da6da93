package history

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"unicode"

	"github.com/probectl/probectl/queries"
)

// cursorJSON is a cursor as a link carries it (base64url of this JSON): opaque to whoever follows
// the link, readable to whoever debugs it.
type cursorJSON struct {
	Slug    string   `json:"s"`
	Outcome string   `json:"o,omitempty"`
	Uptime  *float64 `json:"u,omitempty"`
}

// EncodeCursor writes a cursor for a link (?after= or ?before=).
func EncodeCursor(c queries.DirectoryCursor) string {
	j := cursorJSON{Slug: c.Slug, Outcome: c.Outcome}
	if c.Uptime != -1 {
		j.Uptime = &c.Uptime
	}
	raw, _ := json.Marshal(j) // a struct of strings and a float: cannot fail
	return base64.RawURLEncoding.EncodeToString(raw)
}

// DecodeCursor reads a cursor written by EncodeCursor; the error says what is wrong with it.
func DecodeCursor(s string) (*queries.DirectoryCursor, error) {
	if len(s) > maxCursor {
		return nil, errors.New("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not a cursor of this page")
	}
	var j cursorJSON
	// A control character (NUL among them) is in no slug or outcome, and PostgreSQL refuses a NUL.
	if err := json.Unmarshal(raw, &j); err != nil || j.Slug == "" || strings.ContainsFunc(j.Slug+j.Outcome, unicode.IsControl) {
		return nil, errors.New("not a cursor of this page")
	}
	c := &queries.DirectoryCursor{Slug: j.Slug, Outcome: j.Outcome, Uptime: -1}
	if j.Uptime != nil {
		if *j.Uptime < 0 || *j.Uptime > 1 {
			return nil, errors.New("uptime out of 0..1")
		}
		c.Uptime = *j.Uptime
	}
	return c, nil
}

// maxCursor bounds a cursor: a slug is at most 100 characters, an outcome a word.
const maxCursor = 512
