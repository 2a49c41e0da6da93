package history

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/probectl/probectl/queries"
)

// Bounds of the directory view.
const (
	// MaxPerPage bounds one page of the directory.
	MaxPerPage = 500
	// DefaultPerPage is a page when none is asked for.
	DefaultPerPage = 50
	// ListedFailing and ListedExpiring bound the servers the view names under failing now and
	// certificates expiring; the counts are always complete.
	ListedFailing, ListedExpiring = 20, 20
	// ExpiringWithin is how soon a certificate expiry is flagged.
	ExpiringWithin = 14 * 24 * time.Hour
	// BarRuns is how many runs a server's uptime bar shows.
	BarRuns = 90
)

// Sorts the directory view takes.
var Sorts = []string{"slug", "outcome", "uptime"}

// DirectoryQuery chooses a page of the directory.
type DirectoryQuery struct {
	Sort    string // slug (default), outcome or uptime
	Desc    bool
	Page    int // from 1; without a cursor, the page read by OFFSET; with one, only its number
	PerPage int
	// After and Before (at most one) read the page after or before a row by keyset: what the
	// links of a page carry, so that a deep page costs what the first does.
	After, Before *queries.DirectoryCursor
}

// Validate says what is wrong with a query, naming the parameter.
func (q *DirectoryQuery) Validate() error {
	if q.Sort == "" {
		q.Sort = "slug"
	}
	if !slices.Contains(Sorts, q.Sort) {
		return fmt.Errorf("sort %q: want slug, outcome or uptime", q.Sort)
	}
	if q.Page == 0 {
		q.Page = 1
	}
	if q.PerPage == 0 {
		q.PerPage = DefaultPerPage
	}
	if q.Page < 1 || q.Page > 1_000_000 {
		return fmt.Errorf("page %d: want 1 or more", q.Page)
	}
	if q.PerPage < 1 || q.PerPage > MaxPerPage {
		return fmt.Errorf("per_page %d: want 1..%d", q.PerPage, MaxPerPage)
	}
	if q.After != nil && q.Before != nil {
		return fmt.Errorf("after and before: want at most one")
	}
	return nil
}

// Directory is the directory at a glance, from the per-server rollup (never by counting runs).
type Directory struct {
	At time.Time
	// Counts: active servers by the outcome of their last run ("" never run).
	Counts                      []queries.OutcomeCount
	Failing, Expiring           []queries.DirectoryEntry
	FailingTotal, ExpiringTotal int64
	Query                       DirectoryQuery
	Page                        []queries.DirectoryEntry
	Servers                     int64
	// Next and Prev are the cursors of the pages after and before this one (nil: none).
	Next, Prev *queries.DirectoryCursor
}

// Pages is how many pages the directory has at this page size.
func (d *Directory) Pages() int {
	return max(1, int((d.Servers+int64(d.Query.PerPage)-1)/int64(d.Query.PerPage)))
}

// ReadDirectory reads the directory view as of at (the database's clock when nil).
func ReadDirectory(ctx context.Context, db queries.DBTX, q DirectoryQuery, at *time.Time) (*Directory, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	var d *Directory
	err := read(ctx, db, func(db queries.DBTX) error {
		var err error
		d, err = readDirectory(ctx, db, q, at)
		return err
	})
	return d, err
}

func readDirectory(ctx context.Context, db queries.DBTX, q DirectoryQuery, asOf *time.Time) (*Directory, error) {
	at, err := queries.StatusNow(ctx, db, asOf)
	if err != nil {
		return nil, err
	}
	d := &Directory{At: at, Query: q}
	if d.Counts, err = queries.DirectoryCounts(ctx, db); err != nil {
		return nil, err
	}
	if d.Failing, d.FailingTotal, err = queries.DirectoryFailing(ctx, db, ListedFailing); err != nil {
		return nil, err
	}
	if d.Expiring, d.ExpiringTotal, err = queries.DirectoryExpiring(ctx, db, ListedExpiring, at.Add(ExpiringWithin)); err != nil {
		return nil, err
	}
	if d.Servers, err = queries.DirectoryTotal(ctx, db); err != nil {
		return nil, err
	}
	if err := readPage(ctx, db, d); err != nil {
		return nil, err
	}
	return d, nil
}

// readPage reads the page d.Query names, by keyset from a cursor (or from the start), or by OFFSET
// for a page number without one (a link typed by hand, or kept from before cursors), and the
// cursors of the pages around it.
func readPage(ctx context.Context, db queries.DBTX, d *Directory) error {
	q := d.Query
	if q.Before != nil {
		// The page before a row is the page after it in the reverse order, turned around; one row
		// more says whether there is a page before that.
		rows, err := queries.DirectoryAfter(ctx, db, q.Sort, !q.Desc, q.Before, q.PerPage+1, 0)
		if err != nil {
			return err
		}
		more := len(rows) > q.PerPage
		d.Page = rows[:min(len(rows), q.PerPage)]
		slices.Reverse(d.Page)
		d.Next = q.Before
		if more && len(d.Page) > 0 {
			d.Prev = cursor(d.Page[0], q.Sort)
		}
		return nil
	}
	offset := 0
	if q.After == nil {
		offset = (q.Page - 1) * q.PerPage
	}
	rows, err := queries.DirectoryAfter(ctx, db, q.Sort, q.Desc, q.After, q.PerPage+1, offset)
	if err != nil {
		return err
	}
	d.Page = rows[:min(len(rows), q.PerPage)]
	if len(rows) > q.PerPage {
		d.Next = cursor(d.Page[len(d.Page)-1], q.Sort)
	}
	if (q.After != nil || offset > 0) && len(d.Page) > 0 {
		d.Prev = cursor(d.Page[0], q.Sort)
	}
	return nil
}

func cursor(e queries.DirectoryEntry, sort string) *queries.DirectoryCursor {
	c := queries.CursorOf(e, sort)
	return &c
}

// ServerHistory is a server's page: its view, its last runs for the uptime bar (oldest first) and
// its runs over 30 days for the charts.
type ServerHistory struct {
	*ServerView
	Bar    []queries.Run
	Series []queries.SeriesPoint
}

// ReadServerHistory reads a server's page as of now (the database's clock when nil).
// queries.ErrNoServer: no such slug.
func ReadServerHistory(ctx context.Context, db queries.DBTX, slug string, now *time.Time) (*ServerHistory, error) {
	var h *ServerHistory
	err := read(ctx, db, func(db queries.DBTX) error {
		var err error
		h, err = readServerHistory(ctx, db, slug, now)
		return err
	})
	return h, err
}

func readServerHistory(ctx context.Context, db queries.DBTX, slug string, now *time.Time) (*ServerHistory, error) {
	v, err := showServer(ctx, db, slug, now)
	if err != nil {
		return nil, err
	}
	h := &ServerHistory{ServerView: v}
	if h.Bar, err = serverRuns(ctx, db, v.Server.ID, queries.RunFilter{Server: slug, Limit: BarRuns}, v.At); err != nil {
		return nil, err
	}
	slices.Reverse(h.Bar)
	if h.Series, err = queries.ServerSeries(ctx, db, v.Server.ID, v.At); err != nil {
		return nil, err
	}
	return h, nil
}
