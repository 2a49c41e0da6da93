package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/probe/check"
)

// OneCheck asks for one check outside any round: no database, no job, no claim.
type OneCheck struct {
	URL       string
	Kind      string // mcp | http; "" guesses from the path (see GuessKind)
	Transport string // mcp only; "" is streamable-http
	// Settings supply the request timeout, body cap and address policy, as a round's do.
	Settings Settings
	// Signer, when set, signs the observation as a round would (job and round 0).
	Signer Signer
}

// OneResult is the observation, exactly as a round would store it, and its envelope when signed.
type OneResult struct {
	Target   check.Target
	Result   check.Result
	Envelope json.RawMessage
}

// GuessKind is mcp when the URL's path ends in /mcp or /sse, else http.
func GuessKind(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "http"
	}
	p := strings.TrimSuffix(strings.ToLower(u.Path), "/")
	if strings.HasSuffix(p, "/mcp") || strings.HasSuffix(p, "/sse") {
		return "mcp"
	}
	return "http"
}

// CheckOne makes one check with the checker a round uses, within the same budget and guard, and
// signs it when asked. The check's failure is its outcome, not an error; only signing can fail,
// and a URL whose host the SSRF guard refuses with these settings is not checked: the error is
// that *check.RefusedError, and nothing was sent.
func CheckOne(ctx context.Context, o OneCheck) (OneResult, error) {
	kind := o.Kind
	if kind == "" {
		kind = GuessKind(o.URL)
	}
	target := check.Target{Slug: "check", URL: o.URL, Kind: kind, Transport: o.Transport}
	if kind == "mcp" && target.Transport == "" {
		target.Transport = check.TransportStreamableHTTP
	}
	checker := check.New(CheckConfig(o.Settings))
	// The URL is the caller's: one the guard refuses outright is their input to fix, not an
	// observation of a server that was never contacted. Its lookup has a request's time, apart
	// from the check's budget.
	rctx, rcancel := context.WithTimeout(ctx, o.Settings.RequestTimeout.D())
	refused := checker.Refusal(rctx, o.URL)
	rcancel()
	if refused != nil {
		return OneResult{Target: target}, refused
	}
	cctx, cancel := context.WithTimeout(ctx, o.Settings.CheckBudget())
	res := normalise(checker.Check(cctx, target))
	cancel()
	out := OneResult{Target: target, Result: res}
	if o.Signer != nil {
		env, err := o.Signer.Sign(attest.Run{Slug: target.Slug, URL: target.URL, Kind: target.Kind, Result: res})
		if err != nil {
			return out, fmt.Errorf("sign the observation: %w", err)
		}
		out.Envelope = env
	}
	return out, nil
}
