package check

import (
	"encoding/json"
	"time"
)

// Outcomes of a check, as stored on the job and the run.
const (
	OutcomeOK     = "ok"     // the server answered as its kind should
	OutcomeFailed = "failed" // the server was reached (or refused by policy) but did not answer correctly
	OutcomeError  = "error"  // the check itself could not be made (DNS, connect, timeout)
)

// Target is one server to check.
type Target struct {
	ServerID int64  `json:"server_id"`
	Slug     string `json:"slug"`
	URL      string `json:"url"`
	Kind     string `json:"kind"` // mcp | http
	// Transport is an mcp server's: streamable-http (also when empty) or sse.
	Transport string `json:"transport,omitempty"`
}

// Request is one HTTP request made during a check. At most MaxRequests of them per check.
type Request struct {
	Method         string  `json:"method"`
	URL            string  `json:"url"`
	RPC            string  `json:"rpc,omitempty"` // MCP method, e.g. initialize, tools/list
	Status         int     `json:"status,omitempty"`
	LatencySeconds float64 `json:"latency_seconds"`
	Bytes          int64   `json:"bytes"`
	Error          string  `json:"error,omitempty"`
	// Resent counts the times the HTTP transport sent this request again on a new connection
	// (a server that refuses an HTTP/2 stream): each one reached the server and spent the budget.
	Resent    int       `json:"resent,omitempty"`
	TLS       *TLSInfo  `json:"tls,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// TLSInfo records what the server's certificate said, so that runs show an expiry coming.
type TLSInfo struct {
	Version      string    `json:"version"`
	Subject      string    `json:"subject"`
	Issuer       string    `json:"issuer"`
	CertNotAfter time.Time `json:"cert_not_after"`
}

// Result is the observation one check makes. It is stored as the run's result and signed.
type Result struct {
	Outcome    string    `json:"outcome"`
	Summary    string    `json:"summary"`
	Error      string    `json:"error,omitempty"`
	Requests   []Request `json:"requests"`
	Tools      *int      `json:"tools,omitempty"`       // MCP: number of tools listed
	ServerName string    `json:"server_name,omitempty"` // MCP: serverInfo.name
	// ToolsTruncated: tools/list still had pages when the request budget ran out, so Tools is a
	// lower bound.
	ToolsTruncated bool `json:"tools_truncated,omitempty"`

	// MCP: what the server is (see README, "MCP checks").
	Transport       string        `json:"transport,omitempty"` // the transport that answered
	ProtocolVersion string        `json:"protocol_version,omitempty"`
	ServerVersion   string        `json:"server_version,omitempty"`
	ServerTitle     string        `json:"server_title,omitempty"`
	Capabilities    []string      `json:"capabilities,omitempty"` // sorted names the server declared
	Instructions    *Instructions `json:"instructions,omitempty"`
	Resources       *int          `json:"resources,omitempty"` // when declared and the budget allowed
	Prompts         *int          `json:"prompts,omitempty"`   // when declared and the budget allowed
	// Auth is "required" when the server answered 401 as the MCP authorization spec says; its
	// tools were not seen.
	Auth                        string   `json:"auth,omitempty"`
	AuthorizationServers        []string `json:"authorization_servers,omitempty"`
	AuthorizationServerMetadata bool     `json:"authorization_server_metadata,omitempty"`
	// ToolsFingerprint is the SHA-256 of the canonical JSON of ToolFingerprints (sorted by name);
	// ToolFingerprints has at most MaxToolsFingerprinted entries (more: ToolsTruncated).
	ToolsFingerprint string      `json:"tools_fingerprint,omitempty"`
	ToolFingerprints []ToolPrint `json:"tool_fingerprints,omitempty"`
	// ToolDefinitions maps each fingerprint to its canonical definition: stored once per
	// fingerprint beside the run (tool_definitions), never in the run itself.
	ToolDefinitions map[string]json.RawMessage `json:"-"`
	// ToolDefinitionsCut counts the definitions this check saw that were not stored, for want of
	// room in the bytes one run (check.MaxToolDefinitionBytes) or one server's day
	// (probe.MaxToolTextPerDay) may store; the run keeps their fingerprints.
	ToolDefinitionsCut int `json:"tool_definitions_cut,omitempty"`
	// ToolNamesCut counts the tool names longer than MaxToolNameBytes, recorded cut to it (ending
	// in "…") in ToolFingerprints; their fingerprints are those of the whole definitions.
	ToolNamesCut int `json:"tool_names_cut,omitempty"`
	// RefusedRequests counts requests the check wanted to make past MaxRequests: refused, never
	// sent, and not in Requests (which holds only requests attempted, at most MaxRequests).
	RefusedRequests int `json:"refused_requests,omitempty"`
	// RetryAfterSeconds is the wait a rate-limited server asked for (429 or 503 with Retry-After,
	// Summary "rate_limited"), at most 7 days. The next check comes a full interval after this
	// one is finished, so never before the wait or the interval, whichever is shorter.
	RetryAfterSeconds float64   `json:"retry_after_seconds,omitempty"`
	StartedAt         time.Time `json:"started_at"`
	FinishedAt        time.Time `json:"finished_at"`
	// Fault is FaultProbectl when the result says nothing about the server (interrupted, fenced,
	// late): nothing downstream counts it against the server. Empty otherwise.
	Fault string `json:"fault,omitempty"`
}

// Instructions says whether the server gave instructions, and how long they were (bytes).
type Instructions struct {
	Present bool `json:"present"`
	Length  int  `json:"length"`
}
