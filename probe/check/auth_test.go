package check

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prmServer answers /mcp with a Bearer challenge naming its protected-resource metadata, which
// names this server as the resource and servers(base) as its authorization servers.
func prmServer(t *testing.T, servers func(base string) []string) *fleet {
	t.Helper()
	mux := http.NewServeMux()
	var f *fleet
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": f.URL + "/mcp", "authorization_servers": servers(f.URL)})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server/as", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": f.URL + "/as"})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+f.URL+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "no", http.StatusUnauthorized)
	})
	f = newFleet(t, mux)
	return f
}

// Protected-resource metadata (RFC 9728) lists authorization servers by their RFC 8414 issuer, an
// https URL with no query or fragment: one naming file:, ftp: or anything else is invalid, and the
// check is failed saying so, not "ok, auth required". Nothing is asked of such a server.
func TestProtectedResourceMetadataNamingANonHTTPSAuthorizationServerIsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		servers func(base string) []string
	}{
		{"a file: URL", func(string) []string { return []string{"file:///etc/passwd"} }},
		{"an ftp: URL", func(string) []string { return []string{"ftp://as.example/"} }},
		{"a javascript: URL", func(string) []string { return []string{"javascript:alert(1)"} }},
		{"no scheme", func(string) []string { return []string{"as.example"} }},
		{"no host", func(string) []string { return []string{"https:///as"} }},
		{"a query", func(string) []string { return []string{"https://as.example/?tenant=1"} }},
		{"a fragment", func(string) []string { return []string{"https://as.example/#x"} }},
		{"a good one then a file: URL", func(base string) []string { return []string{base + "/as", "file:///etc/passwd"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := prmServer(t, tc.servers)
			res := checkMCPAt(t, f.URL+"/mcp", "")
			assert.Equal(t, OutcomeFailed, res.Outcome)
			assert.Contains(t, res.Error, "protected-resource metadata is invalid: authorization server")
			assert.Contains(t, res.Summary, "HTTP 401: protected-resource metadata is invalid")
			assert.Empty(t, res.Auth)
			assert.Empty(t, res.AuthorizationServers)
			assert.Equal(t, []string{"POST initialize", "GET"}, rpcs(res), "no authorization server is asked")
			budgetHeld(t, f, res)
		})
	}
}

// Plain http is an issuer only on a test network: with private targets allowed (checkMCPAt) a
// loopback authorization server over http is accepted; without, the same metadata is invalid.
func TestAnHTTPAuthorizationServerIsAcceptedOnlyWithPrivateTargetsAllowed(t *testing.T) {
	t.Parallel()
	f := prmServer(t, func(base string) []string { return []string{base + "/as"} })
	res := checkMCPAt(t, f.URL+"/mcp", "")
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.Equal(t, "required", res.Auth)

	c := New(Config{})
	c.allow = onlyPort(f.Port(t)) // the loopback port stands for a public server
	res = c.Check(context.Background(), Target{URL: f.URL + "/mcp", Kind: "mcp"})
	assert.Equal(t, OutcomeFailed, res.Outcome)
	assert.Contains(t, res.Error, "is not an https URL")
	assert.Empty(t, res.Auth)
}
