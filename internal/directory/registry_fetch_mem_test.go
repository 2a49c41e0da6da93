package directory

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A sync holds every entry until it applies them, so what it keeps of an entry is bounded: a
// registry whose entries list megabytes of packages costs a page's worth while the page is read,
// not the whole listing's until the end. (Not parallel: it reads the heap.)
func TestASyncKeepsOnlyACountOfAnEntrysPackages(t *testing.T) {
	const pages, pkgs = 5, 100_000 // ~8 MiB of packages a page
	pkg := `{"registryType":"npm","identifier":"@acme/some-package-name-xxxxxxxx","version":"1.0.0"}`
	packages := "[" + strings.TrimSuffix(strings.Repeat(pkg+",", pkgs), ",") + "]"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := 1
		if c := r.URL.Query().Get("cursor"); c != "" {
			_, _ = fmt.Sscanf(c, "p%d", &page)
		}
		next := ""
		if page < pages {
			next = fmt.Sprintf(`"nextCursor":"p%d"`, page+1)
		}
		fmt.Fprintf(w, `{"servers":[{"server":{"name":"io.github.acme/p%d","packages":%s}}],"metadata":{%s}}`, page, packages, next)
	}))
	t.Cleanup(srv.Close)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	entries, n, err := fetchRegistry(t.Context(), NewRegistryClient(true), srv.URL, nil)
	require.NoError(t, err)
	require.Equal(t, pages, n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Len(t, entries, pages)
	require.Equal(t, packageCount(pkgs), entries[0].Server.Packages)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	require.Less(t, kept, int64(8<<20), "kept %d MiB of %d MiB of packages", kept>>20, pages*len(packages)>>20)
	runtime.KeepAlive(entries)
}
