// Package history reads what the prober saw: stored runs, one at a time or as a list, a server's
// history (uptime, latency, certificate, tools), and the checks a third party makes on an exported
// run. Every figure it returns is computed from stored runs, so each can be traced back to them.
package history
