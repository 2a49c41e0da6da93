package directory

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/probe/check"
)

// A sync's bounds against the registry: whatever it serves, a sync reads at most this much.
const (
	// RegistryPageLimit is the page size a sync asks for (the registry's maximum).
	RegistryPageLimit = 100
	// MaxRegistryPages bounds the pages of one sync: 100,000 entries at 100 a page.
	MaxRegistryPages = 1000
	// MaxRegistryPageBytes bounds one response body.
	MaxRegistryPageBytes = 10 << 20
	// MaxRegistryEntries bounds the entries of one sync.
	MaxRegistryEntries = 100_000
	// MaxRegistrySyncBytes bounds the response bodies of one sync, all pages together: what a sync
	// holds until it applies is at most what it read.
	MaxRegistrySyncBytes = 64 << 20
	// RegistryRequestTimeout bounds one page's request, from dial to the body's last byte.
	RegistryRequestTimeout = 30 * time.Second
	// maxRegistryRedirects bounds the redirects of one page's request.
	maxRegistryRedirects = 3
)

// RegistryURLError is a registry base URL a sync cannot use: bad input.
type RegistryURLError struct{ Err error }

func (e *RegistryURLError) Error() string { return e.Err.Error() }

func (e *RegistryURLError) Unwrap() error { return e.Err }

// ExitCode: the URL is the user's input.
func (e *RegistryURLError) ExitCode() int { return exit.Usage }

// RegistryBaseURL checks a registry's base URL (the part before /v0/servers) as every endpoint URL
// is checked, refuses a query, and drops a trailing '/': the result names the registry in the sync
// state.
func RegistryBaseURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", &RegistryURLError{Err: errors.New("registry URL: required")}
	}
	if err := ValidateURL(raw); err != nil {
		return "", &RegistryURLError{Err: fmt.Errorf("registry URL%w", err)}
	}
	u, _ := url.Parse(raw)
	if u.RawQuery != "" || u.ForceQuery {
		return "", &RegistryURLError{Err: fmt.Errorf("registry URL %q: must not have a query (the base URL, before /v0/servers)", redactedURL(raw))}
	}
	return strings.TrimRight(raw, "/"), nil
}

// PageError is a registry page a sync could not use: the registry answered with an error, a body
// that is not its list response, a loop or more than a sync's bounds. Nothing of the sync is
// applied; the page is named so the operator can fetch it.
type PageError struct {
	Page int    // 1-based
	URL  string // the page's URL
	Err  error
}

func (e *PageError) Error() string {
	return fmt.Sprintf("registry page %d (%s): %s", e.Page, e.URL, e.Err)
}

func (e *PageError) Unwrap() error { return e.Err }

// ExitCode: the registry served something a sync refuses, a problem found (1), and so is a
// redirect to a refused address; a refused --registry address is the user's input (2); a
// registry that could not be reached is 3.
func (e *PageError) ExitCode() int {
	var refused *check.RefusedError
	var status *registryStatusError
	var shape *registryShapeError
	switch {
	case errors.As(e.Err, &refused):
		return exit.Usage
	case errors.As(e.Err, &status), errors.As(e.Err, &shape):
		return exit.Found
	}
	return exit.Unavailable
}

type registryStatusError struct{ code int }

func (e *registryStatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// registryShapeError: the page was served but is not what a sync can use.
type registryShapeError struct{ msg string }

func (e *registryShapeError) Error() string { return e.msg }

func shapeErrorf(format string, args ...any) error {
	return &registryShapeError{msg: fmt.Sprintf(format, args...)}
}

// NewRegistryClient is the HTTP client a sync reads a registry with: the SSRF guard's dialer
// (loopback and private addresses only when allowPrivate), no environment proxy (it would dial
// around the guard), verified TLS, a bounded time a request and bounded redirects.
func NewRegistryClient(allowPrivate bool) *http.Client {
	return &http.Client{
		Timeout: RegistryRequestTimeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            check.GuardedDialContext(allowPrivate),
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
			MaxResponseHeaderBytes: 64 << 10,
			ForceAttemptHTTP2:      true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if followed, ok := req.Context().Value(redirectedKey{}).(*bool); ok {
				*followed = true
			}
			if len(via) > maxRegistryRedirects {
				return shapeErrorf("more than %d redirects", maxRegistryRedirects)
			}
			if err := validateURL(req.URL.String()); err != nil {
				return shapeErrorf("redirect: %v", err)
			}
			return nil
		},
	}
}

// redirectedKey is the request context's flag that the request followed a redirect: a target
// the SSRF guard refuses is then the registry's doing (exit 1), not the user's --registry (2).
type redirectedKey struct{}

// registryPage is the registry's list response.
type registryPage struct {
	Servers  *[]registryEntry `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
	} `json:"metadata"`
}

// fetchedEntry is one entry of a listing and where it was read.
type fetchedEntry struct {
	registryEntry
	Page, Index int
}

func (e fetchedEntry) where() string { return fmt.Sprintf("page %d entry %d", e.Page, e.Index) }

// fetchRegistry reads every page of base's listing, from the first to the one without a next
// cursor, changed since since (nil: all). It stops at the first page it cannot use.
func fetchRegistry(ctx context.Context, client *http.Client, base string, since *time.Time) ([]fetchedEntry, int, error) {
	var out []fetchedEntry
	seen := map[string]int{}
	cursor := ""
	read := 0
	for page := 1; ; page++ {
		pageURL := registryPageURL(base, cursor, since)
		if page > MaxRegistryPages {
			return nil, page - 1, &PageError{Page: page, URL: pageURL,
				Err: shapeErrorf("more than %d pages: a sync reads at most %d", MaxRegistryPages, MaxRegistryPages)}
		}
		p, n, err := fetchPage(ctx, client, pageURL, MaxRegistrySyncBytes-read)
		read += n
		if err != nil {
			return nil, page, &PageError{Page: page, URL: pageURL, Err: err}
		}
		for i, e := range *p.Servers {
			if n := len(e.Server.Remotes); n > MaxRegistryRemotes {
				return nil, page, &PageError{Page: page, URL: pageURL, Err: shapeErrorf(
					"entry %d (%q): %d remotes, more than the %d an entry may have", i, e.Server.Name, n, MaxRegistryRemotes)}
			}
		}
		if len(out)+len(*p.Servers) > MaxRegistryEntries {
			return nil, page, &PageError{Page: page, URL: pageURL,
				Err: shapeErrorf("more than %d entries: a sync reads at most %d", MaxRegistryEntries, MaxRegistryEntries)}
		}
		for i, e := range *p.Servers {
			out = append(out, fetchedEntry{registryEntry: e, Page: page, Index: i})
		}
		next := p.Metadata.NextCursor
		if next == "" {
			return out, page, nil
		}
		if first, loop := seen[next]; loop || next == cursor {
			if !loop {
				first = page
			}
			return nil, page, &PageError{Page: page, URL: pageURL,
				Err: shapeErrorf("next cursor %q was already followed after page %d: the registry's paging loops", next, first)}
		}
		seen[next] = page
		cursor = next
	}
}

// registryPageURL is one page's URL: limit, then cursor and updated_since when set.
func registryPageURL(base, cursor string, since *time.Time) string {
	q := url.Values{}
	q.Set("limit", strconv.Itoa(RegistryPageLimit))
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if since != nil {
		q.Set("updated_since", since.UTC().Format(time.RFC3339Nano))
	}
	return base + "/v0/servers?" + q.Encode()
}

// fetchPage GETs one page and decodes it, its body bounded before it is decoded (by a page's
// bound and by budget, what the sync may still read); n is how many body bytes it read.
func fetchPage(ctx context.Context, client *http.Client, pageURL string, budget int) (p registryPage, n int, err error) {
	redirected := new(bool)
	req, err := http.NewRequestWithContext(context.WithValue(ctx, redirectedKey{}, redirected), http.MethodGet, pageURL, nil)
	if err != nil {
		return p, 0, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "probectl (servers sync)")
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is in the PageError already
		}
		var refused *check.RefusedError
		if *redirected && errors.As(err, &refused) {
			// Not wrapped: the registry chose the address, so it is a page the sync cannot use.
			return p, 0, shapeErrorf("redirected to a refused address: %v", err)
		}
		return p, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return p, 0, &registryStatusError{code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(min(MaxRegistryPageBytes, budget))+1))
	if err != nil {
		return p, len(body), fmt.Errorf("read body: %w", err)
	}
	switch {
	case len(body) > MaxRegistryPageBytes:
		return p, len(body), shapeErrorf("response larger than %d MiB", MaxRegistryPageBytes>>20)
	case len(body) > budget:
		return p, len(body), shapeErrorf("more than %d MiB read in one sync: a sync reads at most %d MiB of responses",
			MaxRegistrySyncBytes>>20, MaxRegistrySyncBytes>>20)
	}
	p, err = decodeRegistryPage(body)
	return p, len(body), err
}

// decodeRegistryPage decodes one list response; a body without a "servers" list is not one.
func decodeRegistryPage(body []byte) (registryPage, error) {
	var p registryPage
	if err := json.Unmarshal(body, &p); err != nil {
		return p, shapeErrorf("not the registry's list response ({\"servers\": [...], \"metadata\": {...}}): %v", err)
	}
	if p.Servers == nil {
		return p, shapeErrorf("not the registry's list response: no \"servers\" list")
	}
	return p, nil
}
