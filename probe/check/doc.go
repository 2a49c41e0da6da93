// Package check makes one check of one server: an MCP handshake (initialize, then tools/list over
// streamable HTTP, with the official MCP Go SDK) or a plain HTTP GET. Every check keeps to the
// promise made to operators — at most MaxRequests requests — and to our own safety rules: a
// per-request timeout, a response-size cap, verified TLS, and an SSRF guard that refuses loopback,
// private, link-local, multicast and metadata addresses after DNS resolution and on every
// redirect, unless private targets are explicitly allowed.
package check

// MaxRequests is the most requests one check of one server may make: the promise to operators.
const MaxRequests = 8
