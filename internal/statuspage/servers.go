package statuspage

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

//go:embed templates/servers.html
var serversTemplates embed.FS

var serversPage = template.Must(template.ParseFS(serversTemplates, "templates/servers.html"))

// BadgeMaxAge is how long a badge may be cached: a badge is embedded in READMEs far from here,
// and a few minutes' staleness is what such badges promise.
const BadgeMaxAge = 5 * time.Minute

// slugOK answers, before any read, a slug the database could not even compare: not UTF-8 is a bad
// request (400); one holding a control character, NUL among them, names no server (404). Either
// used to reach PostgreSQL, fail there, and answer 503 as if the database were down.
func (h *handler) slugOK(w http.ResponseWriter, slug string) bool {
	if !utf8.ValidString(slug) {
		http.Error(w, "the server's name in the address is not UTF-8", http.StatusBadRequest)
		return false
	}
	if strings.ContainsFunc(slug, unicode.IsControl) {
		http.Error(w, "no such server", http.StatusNotFound)
		return false
	}
	return true
}

// inTx reads within the read timeout, in one read-only transaction.
func (h *handler) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, h.opts.ReadTimeout)
	defer cancel()
	return queries.InReadOnlyTx(ctx, h.opts.DB, fn)
}

func (h *handler) now() *time.Time {
	if h.opts.Now == nil {
		return nil
	}
	t := h.opts.Now()
	return &t
}

// directoryQuery reads ?sort=&desc=&page=&per_page=&after=&before=; bad values are the caller's to report.
func directoryQuery(v url.Values) (history.DirectoryQuery, error) {
	q := history.DirectoryQuery{Sort: v.Get("sort")}
	if s := v.Get("desc"); s != "" {
		desc, err := strconv.ParseBool(s)
		if err != nil {
			return q, fmt.Errorf("desc %q: want true or false (1 or 0)", s)
		}
		q.Desc = desc
	}
	for name, dst := range map[string]*int{"page": &q.Page, "per_page": &q.PerPage} {
		if s := v.Get(name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return q, fmt.Errorf("%s %q: want a number from 1", name, s)
			}
			*dst = n
		}
	}
	for name, dst := range map[string]**queries.DirectoryCursor{"after": &q.After, "before": &q.Before} {
		if s := v.Get(name); s != "" {
			c, err := history.DecodeCursor(s)
			if err != nil {
				return q, fmt.Errorf("%s: %w", name, err)
			}
			*dst = c
		}
	}
	return q, q.Validate()
}

func (h *handler) readDirectory(r *http.Request) (*history.Directory, int, error) {
	q, err := directoryQuery(r.URL.Query())
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	var d *history.Directory
	err = h.inTx(r.Context(), func(tx pgx.Tx) error {
		var err error
		d, err = history.ReadDirectory(r.Context(), tx, q, h.now())
		return err
	})
	if err != nil {
		h.log.Error("read the directory", "err", err)
		return nil, http.StatusServiceUnavailable, errors.New("could not read the database")
	}
	return d, http.StatusOK, nil
}

func (h *handler) directoryPage(l, other *pagesLang) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d, code, err := h.readDirectory(r)
		v := &directoryView{pageView: pageView{L: l, Other: other, OtherPath: other.Prefix + "/servers", Title: l.DirTitle}}
		if err != nil {
			v.Err = err.Error()
		} else {
			v.fill(d)
			if r.URL.RawQuery != "" {
				v.OtherPath += "?" + r.URL.RawQuery
			}
		}
		h.html(w, r, code, l, "directory", v)
	}
}

func (h *handler) serverPage(l, other *pagesLang) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		slug := r.PathValue("slug")
		if !h.slugOK(w, slug) {
			return
		}
		v := &serverView{pageView: pageView{L: l, Other: other, OtherPath: other.Prefix + "/servers/" + url.PathEscape(slug),
			Title: l.Title + " " + slug}}
		var sh *history.ServerHistory
		err := h.inTx(r.Context(), func(tx pgx.Tx) error {
			var err error
			sh, err = history.ReadServerHistory(r.Context(), tx, slug, h.now())
			return err
		})
		code := http.StatusOK
		switch {
		case errors.Is(err, queries.ErrNoServer):
			code, v.Err = http.StatusNotFound, l.NotFound
		case err != nil:
			h.log.Error("read a server's history", "slug", slug, "err", err)
			code, v.Err = http.StatusServiceUnavailable, "could not read the database"
		default:
			v.fill(sh)
		}
		h.html(w, r, code, l, "server", v)
	}
}

func (h *handler) html(w http.ResponseWriter, r *http.Request, code int, l *pagesLang, name string, v any) {
	var buf bytes.Buffer
	if err := serversPage.ExecuteTemplate(&buf, name, v); err != nil {
		h.log.Error("render page", "path", r.URL.Path, "err", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Language", l.Code)
	w.WriteHeader(code)
	_, _ = w.Write(render.PrintablePage(buf.Bytes()))
}

func (h *handler) writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	if err := render.JSON(&buf, v); err != nil {
		h.log.Error("write json", "err", err)
		http.Error(w, "could not write json", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (h *handler) directoryJSON(w http.ResponseWriter, r *http.Request) {
	d, code, err := h.readDirectory(r)
	if err != nil {
		h.writeJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	h.writeJSON(w, code, toDirectoryJSON(d))
}

func (h *handler) keysJSON(w http.ResponseWriter, r *http.Request) {
	keys, err := h.readKeys(r.Context())
	if err != nil {
		h.writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "could not read the database"})
		return
	}
	h.writeJSON(w, http.StatusOK, keys)
}

func (h *handler) keysPEM(w http.ResponseWriter, r *http.Request) {
	keys, err := h.readKeys(r.Context())
	if err != nil {
		http.Error(w, "could not read the database", http.StatusServiceUnavailable)
		return
	}
	var b strings.Builder
	for _, k := range keys {
		retired := "not retired"
		if k.RetiredAt != nil {
			retired = "retired " + k.RetiredAt.Format(time.RFC3339)
		}
		fmt.Fprintf(&b, "# %s (%s, registered %s, %s)\n", k.KeyID, k.Algorithm, k.CreatedAt.Format(time.RFC3339), retired)
		if k.RetiredAt != nil { // as `keys export` writes it, for `runs verify` to apply
			fmt.Fprintf(&b, "Retired-At: %s\n", k.RetiredAt.UTC().Format(time.RFC3339Nano))
		}
		b.WriteString(k.PEM)
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write([]byte(b.String()))
}

func (h *handler) readKeys(ctx context.Context) ([]history.PublicKey, error) {
	var keys []history.PublicKey
	err := h.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		keys, err = history.PublicKeys(ctx, tx)
		return err
	})
	if err != nil {
		h.log.Error("read keys", "err", err)
	}
	return keys, err
}

// badge answers /badge/SLUG.svg: "up 99.9%" over 30 days, else the last outcome; 404 for a slug
// that is not in the directory.
func (h *handler) badge(w http.ResponseWriter, r *http.Request) {
	slug, ok := strings.CutSuffix(r.PathValue("file"), ".svg")
	if !ok || slug == "" {
		http.NotFound(w, r)
		return
	}
	if !h.slugOK(w, slug) {
		return
	}
	var e *queries.DirectoryEntry
	err := h.inTx(r.Context(), func(tx pgx.Tx) error {
		var err error
		e, err = queries.ServerRollup(r.Context(), tx, slug)
		return err
	})
	if err != nil {
		h.log.Error("read a badge", "slug", slug, "err", err)
		http.Error(w, "could not read the database", http.StatusServiceUnavailable)
		return
	}
	if e == nil {
		http.NotFound(w, r)
		return
	}
	text, colour := badgeText(e)
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(BadgeMaxAge.Seconds())))
	if e.LastRunAt != nil {
		w.Header().Set("Last-Modified", e.LastRunAt.UTC().Format(http.TimeFormat))
	}
	_, _ = w.Write(badge(e.Kind, text, colour))
}

func badgeText(e *queries.DirectoryEntry) (string, string) {
	switch {
	case e.Status != "active":
		return e.Status, "#8d96a0"
	case e.Uptime30d != nil:
		colour := "#1a7f37"
		if e.LastOutcome != "ok" {
			colour = "#b42318"
		} else if *e.Uptime30d < 0.99 {
			colour = "#9a6700"
		}
		return "up " + strconv.FormatFloat(*e.Uptime30d*100, 'f', 1, 64) + "%", colour
	case e.LastOutcome != "":
		return e.LastOutcome, outcomeColour(e.LastOutcome)
	}
	return "not checked yet", "#8d96a0"
}
