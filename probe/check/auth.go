package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthError says a server answered 401 without following the MCP authorization spec: no Bearer
// challenge, or no metadata that names it. The check is failed, with this reason.
type AuthError struct{ Reason string }

func (e *AuthError) Error() string { return "authorization: " + e.Reason }

// checkAuth judges a 401: a Bearer challenge plus RFC 9728 protected-resource metadata whose
// resource is the server's URL (from the challenge's resource_metadata, else the well-known
// paths in the spec's order), or, under the 2025-03-26 revision, RFC 8414 authorization-server
// metadata at the origin's root, means the server is up and requires authorization: outcome ok,
// auth "required". The first authorization server's metadata is fetched too. Everything goes
// through client, so it counts against the budget like any other request. Each authorization
// server the metadata names must be an RFC 8414 issuer (see issuerProblem): plain http only when
// allowHTTP (private targets allowed: a test network's servers speak http).
func checkAuth(ctx context.Context, client *http.Client, endpoint string, www []string, allowHTTP bool) (Result, error) {
	fail := func(reason string) (Result, error) {
		return Result{Summary: "HTTP 401: " + reason}, &AuthError{Reason: reason}
	}
	params, ok := bearerChallenge(www)
	if !ok {
		return fail("401 without a Bearer challenge")
	}
	u, _ := url.Parse(endpoint)
	var candidates []string
	if rm := params["resource_metadata"]; rm != "" {
		candidates = append(candidates, rm)
	} else {
		root := originOf(u) + "/.well-known/oauth-protected-resource"
		if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
			candidates = append(candidates, root+p)
		}
		candidates = append(candidates, root)
	}
	for _, where := range candidates {
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if !getJSON(ctx, client, u, where, &prm) {
			continue
		}
		if !sameResource(prm.Resource, u) {
			return fail(fmt.Sprintf("protected-resource metadata names resource %q, not this server", clip(prm.Resource, 200)))
		}
		if len(prm.AuthorizationServers) == 0 {
			return fail("protected-resource metadata names no authorization server")
		}
		for _, as := range prm.AuthorizationServers {
			if problem := issuerProblem(as, allowHTTP); problem != "" {
				return fail(fmt.Sprintf("protected-resource metadata is invalid: authorization server %q %s", clip(as, 200), problem))
			}
		}
		res := required(prm.AuthorizationServers)
		res.AuthorizationServerMetadata = asMetadata(ctx, client, u, prm.AuthorizationServers[0])
		return res, nil
	}
	// 2025-03-26: the authorization server is the MCP server's origin.
	var asm struct {
		Issuer string `json:"issuer"`
	}
	if getJSON(ctx, client, u, originOf(u)+"/.well-known/oauth-authorization-server", &asm) && asm.Issuer != "" {
		res := required([]string{originOf(u)})
		res.AuthorizationServerMetadata = true
		return res, nil
	}
	return fail("no protected-resource metadata naming this server, and no authorization-server metadata at its origin")
}

// issuerProblem says why s is not an authorization server's issuer identifier, "" when it is one.
// RFC 9728 §2 lists authorization servers by their RFC 8414 issuer identifier: a URL that uses
// the https scheme, with a host and no query or fragment (RFC 8414 §2). A file:, ftp: or any
// other scheme is invalid metadata, not a server that is up behind auth. Plain http is accepted
// only when allowHTTP, as private targets are for a test network.
func issuerProblem(s string, allowHTTP bool) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme == "http" && !allowHTTP:
		return "is not an https URL (RFC 8414 issuer; http only with private targets allowed)"
	case u.Scheme != "https" && u.Scheme != "http":
		return "is not an https URL (RFC 8414 issuer)"
	case u.Host == "":
		return "has no host"
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#"):
		return "has a query or fragment (RFC 8414 issuer)"
	}
	return ""
}

func required(servers []string) Result {
	shown := make([]string, 0, min(len(servers), 5))
	for _, s := range servers[:min(len(servers), 5)] {
		shown = append(shown, clip(s, 200))
	}
	return Result{Auth: "required", AuthorizationServers: shown,
		Summary: "auth required, tools not verified"}
}

// asMetadata fetches an authorization server's metadata at the well-known URLs the MCP
// authorization spec lists, in its order (RFC 8414 with path insertion, then OpenID Connect
// Discovery with path insertion, then with the path appended; without a path, RFC 8414 then
// OpenID Connect); true at the first that answers with an issuer. At most three requests.
func asMetadata(ctx context.Context, client *http.Client, base *url.URL, issuer string) bool {
	iu, err := url.Parse(issuer)
	if err != nil || (iu.Scheme != "https" && iu.Scheme != "http") || iu.Host == "" {
		return false
	}
	origin, path := originOf(iu), strings.TrimSuffix(iu.EscapedPath(), "/")
	candidates := []string{origin + "/.well-known/oauth-authorization-server" + path,
		origin + "/.well-known/openid-configuration" + path}
	if path != "" {
		candidates = append(candidates, origin+path+"/.well-known/openid-configuration")
	}
	for _, where := range candidates {
		var asm struct {
			Issuer string `json:"issuer"`
		}
		if getJSON(ctx, client, base, where, &asm) && asm.Issuer != "" {
			return true
		}
	}
	return false
}

// sameResource: the metadata's resource is the server's URL, or a parent of it on the same
// origin (a resource may cover several endpoints); a trailing slash does not count.
func sameResource(resource string, u *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Host == "" || originOf(r) != originOf(u) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	up := strings.TrimSuffix(u.EscapedPath(), "/")
	return rp == up || strings.HasPrefix(up, rp+"/")
}

// getJSON GETs where (resolved against base) and decodes a 200 JSON answer into v.
func getJSON(ctx context.Context, client *http.Client, base *url.URL, where string, v any) bool {
	target, err := base.Parse(where)
	if err != nil || (target.Scheme != "https" && target.Scheme != "http") {
		return false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return false
	}
	return json.NewDecoder(resp.Body).Decode(v) == nil
}

// bearerChallenge finds a Bearer challenge among WWW-Authenticate values (parsed by the SDK) and
// its auth-params.
func bearerChallenge(values []string) (map[string]string, bool) {
	challenges, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil {
		return nil, false
	}
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			return c.Params, true
		}
	}
	return nil, false
}
