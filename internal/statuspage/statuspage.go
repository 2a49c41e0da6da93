// Package statuspage serves the status report over HTTP for an operator on call: a page in English
// (/status) and in Chinese (/zh/status), the same report as JSON (/status.json), a handful of
// Prometheus gauges (/metrics) and a health check (/healthz).
//
// Pages are rendered on the server with html/template, carry their CSS inline and load nothing
// else (the Content-Security-Policy forbids it), read well on a phone and refresh themselves every
// 30 seconds. Every request reads the database afresh through status.Read, bounded by a timeout;
// nothing is cached, so what a page shows is at most one refresh old. A rendered page passes
// render.PrintablePage before it is sent: a bidi control or other format character in a server's
// text is shown as an escape (\u202e), never obeyed.
package statuspage

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/internal/status"
	"github.com/probectl/probectl/queries"
)

// Defaults for Options.
const (
	DefaultReadTimeout = 10 * time.Second
	DefaultRefresh     = 30 * time.Second
)

//go:embed templates/status.html
var templates embed.FS

var page = template.Must(template.ParseFS(templates, "templates/status.html"))

// Database is what the handlers read: a *pgxpool.Pool.
type Database interface {
	queries.DB
	Ping(ctx context.Context) error
}

// Options configure the handler.
type Options struct {
	DB Database
	// Now gives the moment a report is read as of; nil means the database's clock.
	Now func() time.Time
	// ReadTimeout bounds each request's read of the database (default DefaultReadTimeout).
	ReadTimeout time.Duration
	// Refresh is how often a page reloads itself (default DefaultRefresh).
	Refresh time.Duration
	// Logger receives one line per request and the errors (default: discarded).
	Logger *slog.Logger
}

type handler struct {
	opts Options
	log  *slog.Logger
}

// Handler returns the routes of routeTable (Routes): the status pages, the directory's pages, their
// JSON, the keys, the badges, /metrics, /healthz, and / (which redirects to the page in the
// browser's preferred language).
func Handler(opts Options) http.Handler {
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{opts: opts, log: log}
	mux := http.NewServeMux()
	h.route(mux)
	return h.logged(secured(mux))
}

// read reads the report within the read timeout.
func (h *handler) read(ctx context.Context) (*status.Report, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, h.opts.ReadTimeout)
	defer cancel()
	start := time.Now()
	r, err := status.Read(ctx, h.opts.DB, h.now())
	return r, time.Since(start), err
}

func (h *handler) root(w http.ResponseWriter, r *http.Request) {
	target := english.Path
	if prefersChinese(r.Header.Get("Accept-Language")) {
		target = chinese.Path
	}
	http.Redirect(w, r, target, http.StatusFound)
}

func (h *handler) page(l, other *lang) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rep, _, err := h.read(r.Context())
		code := http.StatusOK
		if err != nil {
			h.log.Error("read status for the page", "path", r.URL.Path, "err", err)
			rep, code = nil, http.StatusServiceUnavailable
		}
		var buf bytes.Buffer
		if err := page.Execute(&buf, newView(l, other, h.opts.Refresh, rep)); err != nil {
			h.log.Error("render status page", "path", r.URL.Path, "err", err)
			http.Error(w, "could not render the page", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Language", l.Code)
		w.WriteHeader(code)
		_, _ = w.Write(render.PrintablePage(buf.Bytes()))
	}
}

func (h *handler) json(w http.ResponseWriter, r *http.Request) {
	rep, _, err := h.read(r.Context())
	if err != nil {
		h.log.Error("read status for json", "err", err)
		h.writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not read the database"})
		return
	}
	h.writeJSON(w, http.StatusOK, rep)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	rep, took, err := h.read(r.Context())
	if err != nil {
		// A failed scrape shows up as up == 0 in Prometheus, which is what an outage should look like.
		h.log.Error("read status for metrics", "err", err)
		http.Error(w, "could not read the database", http.StatusServiceUnavailable)
		return
	}
	totals, err := h.readRunTotals(r.Context())
	if err != nil {
		h.log.Error("read run totals for metrics", "err", err)
		http.Error(w, "could not read the database", http.StatusServiceUnavailable)
		return
	}
	alertTotals, err := h.readAlertTotals(r.Context()) // alerts (metrics_alerts.go)
	if err != nil {
		h.log.Error("read alert delivery totals for metrics", "err", err)
		http.Error(w, "could not read the database", http.StatusServiceUnavailable)
		return
	}
	var buf bytes.Buffer
	writeMetrics(&buf, rep, took)
	writeRunMetrics(&buf, totals)
	writeAlertMetrics(&buf, alertTotals)
	w.Header().Set("Content-Type", MetricsContentType)
	_, _ = w.Write(buf.Bytes())
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.ReadTimeout)
	defer cancel()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := h.opts.DB.Ping(ctx); err != nil {
		h.log.Error("health check: database did not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("database unavailable\n"))
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// prefersChinese reads an Accept-Language header just far enough to pick between the two pages:
// Chinese when a zh tag comes before any en tag.
func prefersChinese(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.ToLower(tag)
		switch {
		case tag == "zh" || strings.HasPrefix(tag, "zh-"):
			return true
		case tag == "en" || strings.HasPrefix(tag, "en-"):
			return false
		}
	}
	return false
}

// secured sets the headers every answer carries: nothing may be loaded from anywhere (the pages
// need only their inline CSS), nothing is cached (the page is live), no referrer leaks out.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// logged writes one line per request to the logger.
func (h *handler) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		h.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.code,
			"duration", time.Since(start).Round(time.Microsecond))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
