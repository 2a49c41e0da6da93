package statuspage

import (
	"fmt"
	"net/http"
	"strings"
)

// Route is one thing the server answers: the mux registers it and `probectl serve --help` lists
// it, both from routeTable, so that the help cannot omit a route the server has.
type Route struct {
	// Path is how the help writes it ("/servers/{slug}").
	Path string
	// Help says what it answers, in one line.
	Help string

	pattern string // the mux's pattern, "GET /servers/{slug}"
	serve   func(h *handler) http.HandlerFunc
}

// routeTable is every route, in the order the help lists them.
var routeTable = []Route{
	{Path: "/", Help: "redirects to /status or /zh/status, by the browser's language", pattern: "GET /{$}",
		serve: func(h *handler) http.HandlerFunc { return h.root }},
	{Path: "/status", Help: "the status page in English", pattern: "GET /status",
		serve: func(h *handler) http.HandlerFunc { return h.page(&english, &chinese) }},
	{Path: "/zh/status", Help: "the same page in Chinese", pattern: "GET /zh/status",
		serve: func(h *handler) http.HandlerFunc { return h.page(&chinese, &english) }},
	{Path: "/status.json", Help: "the report in the shape of 'probectl status -o json' (docs/status.md)",
		pattern: "GET /status.json", serve: func(h *handler) http.HandlerFunc { return h.json }},
	{Path: "/metrics", Help: "Prometheus metrics: jobs, rounds, duplicate pairs, runs (text format 0.0.4)",
		pattern: "GET /metrics", serve: func(h *handler) http.HandlerFunc { return h.metrics }},
	{Path: "/healthz", Help: `"ok" while the database answers, 503 otherwise`, pattern: "GET /healthz",
		serve: func(h *handler) http.HandlerFunc { return h.healthz }},
	{Path: "/servers", Help: "the directory: servers by last outcome, failing ones, expiring certificates",
		pattern: "GET /servers", serve: func(h *handler) http.HandlerFunc { return h.directoryPage(&pagesEnglish, &pagesChinese) }},
	{Path: "/zh/servers", Help: "the same page in Chinese", pattern: "GET /zh/servers",
		serve: func(h *handler) http.HandlerFunc { return h.directoryPage(&pagesChinese, &pagesEnglish) }},
	{Path: "/servers/{slug}", Help: "one server: uptime, latency, certificate, tools, its last runs",
		pattern: "GET /servers/{slug}", serve: func(h *handler) http.HandlerFunc { return h.serverPage(&pagesEnglish, &pagesChinese) }},
	{Path: "/zh/servers/{slug}", Help: "the same page in Chinese", pattern: "GET /zh/servers/{slug}",
		serve: func(h *handler) http.HandlerFunc { return h.serverPage(&pagesChinese, &pagesEnglish) }},
	{Path: "/servers.json", Help: "the directory as JSON (?sort=, desc=, page=, per_page=, after=, before=)",
		pattern: "GET /servers.json", serve: func(h *handler) http.HandlerFunc { return h.directoryJSON }},
	{Path: "/keys", Help: "the public keys that verify runs, with their retirement, as JSON", pattern: "GET /keys",
		serve: func(h *handler) http.HandlerFunc { return h.keysJSON }},
	{Path: "/zh/keys", Help: "the same keys (from the Chinese pages)", pattern: "GET /zh/keys",
		serve: func(h *handler) http.HandlerFunc { return h.keysJSON }},
	{Path: "/keys.pem", Help: "the same keys as PEM", pattern: "GET /keys.pem",
		serve: func(h *handler) http.HandlerFunc { return h.keysPEM }},
	{Path: "/badge/{slug}.svg", Help: "a server's badge: its 30-day uptime or last outcome", pattern: "GET /badge/{file}",
		serve: func(h *handler) http.HandlerFunc { return h.badge }},
}

// Routes lists every route the server answers, in the order its help lists them.
func Routes() []Route { return append([]Route(nil), routeTable...) }

// RoutesHelp writes the routes as the help lists them: one per line, indented, paths aligned.
func RoutesHelp() string {
	routes := Routes()
	width := 0
	for _, r := range routes {
		width = max(width, len(r.Path))
	}
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r.Path, r.Help)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// route registers every route of routeTable on mux.
func (h *handler) route(mux *http.ServeMux) {
	for _, r := range routeTable {
		mux.HandleFunc(r.pattern, r.serve(h))
	}
}
