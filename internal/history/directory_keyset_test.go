package history_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/testfactory"
	"github.com/probectl/probectl/queries"
)

// Every order of the directory, paged by cursor forward and back, shows every server exactly once
// in one order, the same as a page number (OFFSET) shows: with ties on the sort key (equal
// uptimes, equal outcomes), servers never run (no rollup, sorted as none) and a last page that is
// not full.
func TestDirectoryPagesByCursorInEveryOrderAsByPageNumber(t *testing.T) {
	t.Parallel()
	db := dbtest.Pool(t, migrated.NewDB(t))
	failed := map[string]any{"outcome": "failed", "summary": "HTTP 500"}
	for i := range 23 {
		id := testfactory.Server(t.Context(), t, db, &testfactory.ServerOpts{Slug: fmt.Sprintf("k-%02d", (i*7)%23)})
		switch i % 4 {
		case 0: // never run
		case 1:
			run(t, db, id, time.Hour, time.Second, ok(), "")
		case 2:
			run(t, db, id, 2*time.Hour, time.Second, ok(), "")
			run(t, db, id, time.Hour, time.Second, failed, "")
		case 3:
			run(t, db, id, time.Hour, time.Second, failed, "")
		}
	}
	const per = 4
	for _, sort := range history.Sorts {
		for _, desc := range []bool{false, true} {
			name := fmt.Sprintf("%s desc=%v", sort, desc)
			read := func(q history.DirectoryQuery) *history.Directory {
				q.Sort, q.Desc, q.PerPage = sort, desc, per
				d, err := history.ReadDirectory(t.Context(), db, q, &at)
				require.NoError(t, err, name)
				return d
			}
			whole, err := history.ReadDirectory(t.Context(), db, history.DirectoryQuery{Sort: sort, Desc: desc, PerPage: 100}, &at)
			require.NoError(t, err)
			want := slugs(whole.Page)
			require.Len(t, want, 23, name)
			assert.True(t, slices.IsSortedFunc(whole.Page, ordered(sort, desc)), "%s: %v", name, want)

			// forward by cursor, each page as by its number
			var got []string
			var pages []*history.Directory
			d := read(history.DirectoryQuery{})
			for n := 1; ; n++ {
				require.LessOrEqual(t, n, 6, name)
				byNumber := read(history.DirectoryQuery{Page: n})
				assert.Equal(t, slugs(byNumber.Page), slugs(d.Page), "%s page %d", name, n)
				got = append(got, slugs(d.Page)...)
				pages = append(pages, d)
				if d.Next == nil {
					break
				}
				d = read(history.DirectoryQuery{Page: n + 1, After: d.Next})
			}
			assert.Equal(t, want, got, name)
			assert.Len(t, pages, 6, name)
			assert.Nil(t, pages[0].Prev, name)

			// and back from the last page by the cursor of each
			for n := len(pages) - 1; n > 0; n-- {
				require.NotNil(t, pages[n].Prev, "%s page %d", name, n+1)
				back := read(history.DirectoryQuery{Page: n, Before: pages[n].Prev})
				assert.Equal(t, slugs(pages[n-1].Page), slugs(back.Page), "%s back to page %d", name, n)
				assert.Equal(t, n > 1, back.Prev != nil, "%s: a page before page %d", name, n)
			}
		}
	}
}

func slugs(es []queries.DirectoryEntry) []string {
	out := make([]string, 0, len(es))
	for _, e := range es {
		out = append(out, e.Slug)
	}
	return out
}

// ordered compares two entries in the order the directory documents: the sort key (an outcome,
// "" never run, first; an uptime, none first), then the slug; descending reverses both.
func ordered(sort string, desc bool) func(a, b queries.DirectoryEntry) int {
	key := func(e queries.DirectoryEntry) (string, float64) {
		switch sort {
		case "outcome":
			return e.LastOutcome, 0
		case "uptime":
			if e.Uptime30d == nil {
				return "", -1
			}
			return "", *e.Uptime30d
		}
		return "", 0
	}
	return func(a, b queries.DirectoryEntry) int {
		as, af := key(a)
		bs, bf := key(b)
		c := cmp.Or(cmp.Compare(as, bs), cmp.Compare(af, bf), cmp.Compare(a.Slug, b.Slug))
		if desc {
			return -c
		}
		return c
	}
}
