package check

import "net/url"

// RedactURL is an endpoint URL fit to print or serve: what a run stores for its requests (no user
// info, query values replaced, no fragment). A URL that does not parse is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url, redacted)"
	}
	return redactedURL(u)
}
