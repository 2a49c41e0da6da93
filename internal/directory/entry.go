package directory

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Plans and the check interval each one promises operators.
var planIntervals = map[string]time.Duration{
	"standard": 12 * time.Hour,
	"frequent": 15 * time.Minute,
}

// PlanInterval returns the check interval of a plan.
func PlanInterval(plan string) (time.Duration, bool) {
	d, ok := planIntervals[plan]
	return d, ok
}

// Entry is one server as a user describes it.
type Entry struct {
	Slug string `json:"slug"`
	URL  string `json:"url"`
	Kind string `json:"kind"`
	Plan string `json:"plan"`
	// Transport is an mcp server's: streamable-http (the default) or sse. Empty for http.
	Transport string `json:"transport,omitempty"`
}

// MaxURLBytes bounds an endpoint URL. Browsers, CDNs and most servers refuse longer ones (RFC 9110
// recommends supporting at least 8,000 octets, which probectl keeps for redirects), and a long URL
// is only ever a way to make every check and every page that shows the server costlier.
const MaxURLBytes = 2048

var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,99}$`)

// Validate checks an entry and fills in defaults (plan "standard"). The message names the field.
func (e *Entry) Validate() error {
	e.Slug = strings.TrimSpace(e.Slug)
	e.URL = strings.TrimSpace(e.URL)
	e.Kind = strings.TrimSpace(e.Kind)
	e.Plan = strings.TrimSpace(e.Plan)
	e.Transport = strings.TrimSpace(e.Transport)
	if e.Plan == "" {
		e.Plan = "standard"
	}
	if !slugPattern.MatchString(e.Slug) {
		return fmt.Errorf("slug %s: must be 1-100 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit", quoteShort(e.Slug))
	}
	if err := ValidateURL(e.URL); err != nil {
		return fmt.Errorf("url%w", err)
	}
	if e.Kind != "mcp" && e.Kind != "http" {
		return fmt.Errorf("kind %s: must be mcp or http", quoteShort(e.Kind))
	}
	if err := e.validateTransport(); err != nil {
		return err
	}
	if _, ok := planIntervals[e.Plan]; !ok {
		return fmt.Errorf("plan %s: must be standard (every 12h) or frequent (every 15m)", quoteShort(e.Plan))
	}
	return nil
}

// validateTransport defaults an mcp server's transport to streamable-http and refuses one on an
// http server.
func (e *Entry) validateTransport() error {
	switch {
	case e.Kind == "http" && e.Transport != "":
		return fmt.Errorf("transport %s: only mcp servers have a transport", quoteShort(e.Transport))
	case e.Kind == "http":
		return nil
	case e.Transport == "":
		e.Transport = "streamable-http"
	case e.Transport != "streamable-http" && e.Transport != "sse":
		return fmt.Errorf("transport %s: must be streamable-http or sse", quoteShort(e.Transport))
	}
	return nil
}

// ValidateURL is the rule every endpoint URL meets, in the directory and in a one-off check: at
// most MaxURLBytes, http or https with a host, no credentials, no fragment. Its message starts with
// what follows a field name (` "https://…": no host`) and never prints user info or a long URL.
func ValidateURL(raw string) error {
	if len(raw) > MaxURLBytes {
		// Not quoted: a megabyte of URL helps no one read the error.
		return fmt.Errorf(": %d bytes, longer than the %d-byte limit", len(raw), MaxURLBytes)
	}
	if err := validateURL(raw); err != nil {
		return fmt.Errorf(" %q: %w", redactedURL(raw), err)
	}
	return nil
}

func validateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("not a url")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https")
	}
	if u.Hostname() == "" {
		return fmt.Errorf("no host")
	}
	if u.User != nil {
		// Credentials in a URL would end up in tables, logs and runs.
		return fmt.Errorf("must not carry credentials")
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil || p == "0" {
			return fmt.Errorf("bad port")
		}
	}
	if u.Fragment != "" {
		return fmt.Errorf("must not have a fragment")
	}
	return nil
}

// redactedURL is the URL as it may be printed: a password in it is replaced (the refusal of a URL
// with credentials must not print them to a terminal or a CI log). A URL that does not parse may
// still carry user info: everything before its last '@' goes, whatever it held.
func redactedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Without a host, url.Parse did not see an authority ("alice:pw@host" reads as scheme
		// "alice"), so it found no user info to mask either.
		return redactUnparsed(raw)
	}
	if u.User == nil {
		return raw
	}
	return u.Redacted()
}

// redactUnparsed drops what may be user info from a URL url.Parse refused: the text between the
// scheme and the last '@' (a password may itself hold '/', '?' or '#', so no cheaper rule is safe).
func redactUnparsed(raw string) string {
	at := strings.LastIndexByte(raw, '@')
	if at < 0 {
		return raw
	}
	scheme := ""
	if i := strings.Index(raw, "://"); i >= 0 && i < at {
		scheme = raw[:i+3]
	}
	return scheme + "xxxxx@" + raw[at+1:]
}

// quoteShort quotes a value for an error, cut after 64 characters (and its length said): a
// value a megabyte long helps no one read the error.
func quoteShort(v string) string {
	const most = 64
	n := utf8.RuneCountInString(v)
	if n <= most {
		return strconv.Quote(v)
	}
	end, count := 0, 0
	for at := range v {
		if count == most {
			end = at
			break
		}
		count++
	}
	return fmt.Sprintf("%s… (%d characters)", strconv.Quote(v[:end]), n)
}
