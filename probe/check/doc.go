// Package check makes one check of one server: an MCP handshake (initialize, then tools/list over
// streamable HTTP, with the official MCP Go SDK) or a plain HTTP GET. Every check keeps to the
// promise made to operators — at most MaxRequests requests — and to our own safety rules: a
// per-request timeout, a response-size cap, verified TLS, and an SSRF guard that refuses loopback,
// private, link-local, multicast and metadata addresses after DNS resolution and on every
// redirect, unless private targets are explicitly allowed.
//
// The guard resolves a name once, refuses it if any of its addresses is not public (IPv4-mapped,
// IPv4-compatible, NAT64 and 6to4 forms are judged by the IPv4 address they carry), and dials the
// very address it checked; the dialer's Control hook checks the socket address again. Cloud
// metadata endpoints (one table, with a source for each: metadata.go) and every link-local
// address stay refused even when private targets are allowed. Proxies from the
// environment are ignored, since a proxy would dial around the guard.
//
// Every request, whoever makes it (our GET or the MCP SDK), goes through one recording round
// tripper: it refuses the request past MaxRequests without sending it, bounds each request with
// the per-request timeout, cuts bodies at the size cap, and records method, URL, JSON-RPC method,
// status, latency, bytes and TLS certificate details in Result.Requests.
//
// Runs store what a check saw, so URLs are stored redacted: user info and fragment removed, and
// every query value replaced by "redacted" while parameter names are kept ("?token=redacted").
// Error text gets the same treatment for every URL the check sent or was redirected to, since
// net/http and the MCP SDK quote whole URLs in their errors. Redaction is by exact text, so a
// secret a server echoes back in another form (in a body, or re-encoded) is not caught: directory
// entries should not carry secrets in their URLs at all, in query parameters least of all.
package check

import "github.com/probectl/probectl/probe/settings"

// MaxRequests is the most requests one check of one server may make: the promise to operators
// (its number is the lease arithmetic's: probe/settings).
const MaxRequests = settings.MaxRequests
