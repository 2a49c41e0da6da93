package statuspage_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
)

// chromiumPath finds the browser: PROBECTL_CHROMIUM, else Debian's chromium package. Where
// PROBECTL_REQUIRE_BROWSER=1 (.ci/run sets it after installing the package) a missing browser
// fails the test, so a green CI run means a browser really showed the pages; elsewhere it skips,
// loudly ('make test' says so too), so that a machine with Go and PostgreSQL passes the README's
// test command.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROBECTL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no chromium on PATH: install Debian's chromium package (apt-get install chromium; .ci/run does) or set PROBECTL_CHROMIUM"
	if os.Getenv("PROBECTL_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "SKIPPED %s: %s; PROBECTL_REQUIRE_BROWSER=1 makes this a failure\n", t.Name(), msg)
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium that can reach nothing but loopback, with a fresh profile
// and a temporary directory of its own (Chromium leaves its singleton socket's directory in
// TMPDIR), and returns a context whose actions run in one tab of it.
func browser(t *testing.T) context.Context {
	t.Helper()
	// Short: the socket's path must fit a sockaddr_un (108 bytes), which a test's TempDir may not.
	tmp, err := os.MkdirTemp("", "chromium-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) }) // after the browser has stopped (cleanups run last first)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+tmp),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("lang", "en-US"),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first Run starts the browser, for as long as ctx lives: no timeout on it.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start chromium")
	return ctx
}

// servePage runs the real server (statuspage.Serve) on a loopback port, over a database holding
// the statustest scenario, seen at its Now, and returns its base URL.
func servePage(t *testing.T) string {
	t.Helper()
	return serveSeeded(t, func(pool *pgxpool.Pool) { statustest.Seed(context.Background(), t, pool) }, statustest.Now)
}

// serveSeeded runs the real server on a loopback port over a database seed fills, seen at now,
// and returns its base URL.
func serveSeeded(t *testing.T, seed func(*pgxpool.Pool), now time.Time) string {
	t.Helper()
	pool := migrated.Pool(t)
	seed(pool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return now }})
	go func() { done <- statuspage.Serve(ctx, ln, h, nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

// seen is what a person sees on a page.
type seen struct {
	Lang string   `json:"lang"`
	Text string   `json:"text"`
	Rows []string `json:"rows"` // each row of the open-jobs table, as its visible text
	// Overflow is how far the page is wider than the screen (0: nothing to scroll sideways).
	Overflow int `json:"overflow"`
}

const seeScript = `({
  lang: document.documentElement.lang,
  text: document.body.innerText,
  rows: Array.from(document.querySelectorAll('#open-jobs tbody tr')).map(r => r.innerText),
  overflow: document.documentElement.scrollWidth - window.innerWidth,
})`

func TestABrowserShowsTheJobLeftBetweenItsWritesInBothLanguages(t *testing.T) {
	base := servePage(t)
	ctx := browser(t)

	cases := []struct {
		name, path, lang                       string
		open, advanced, stale, bwAge, staleAge string
		switchTo                               string
	}{
		{"in English", "/status", "en", "open", "advanced, not finished", "stale", "4m12s", "40m", "中文"},
		{"in Chinese", "/zh/status", "zh-CN", "未结束", "已推后、未结束", "已超时", "4分12秒", "40分", "English"},
	}
	for _, c := range cases {
		for _, screen := range []struct {
			name          string
			width, height int64
		}{{"on a laptop", 1280, 900}, {"on a phone", 390, 844}} {
			t.Run(c.name+" "+screen.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				require.NoError(t, chromedp.Do(ctx,
					chromedp.EmulateViewport(screen.width, screen.height),
					chromedp.Navigate(base+c.path)))
				got, err := chromedp.Run(ctx, chromedp.Evaluate[seen](seeScript))
				require.NoError(t, err)
				screenshot(t, ctx, strings.TrimPrefix(strings.ReplaceAll(c.path, "/", "-"), "-")+"-"+screen.name)

				require.Equal(t, c.lang, got.Lang)
				require.Contains(t, got.Text, c.switchTo, "a link to the other language")
				require.LessOrEqual(t, got.Overflow, 0, "nothing to scroll sideways")

				between := rowNaming(t, got.Rows, statustest.BetweenWrites)
				require.Contains(t, between, c.open)
				require.Contains(t, between, c.advanced)
				require.Contains(t, between, c.bwAge)
				require.NotContains(t, between, c.stale)

				stale := rowNaming(t, got.Rows, statustest.Stale)
				require.Contains(t, stale, c.stale)
				require.Contains(t, stale, c.staleAge)

				for _, s := range []string{statustest.BetweenWrites, statustest.Stale, statustest.InFlight, c.bwAge, c.advanced} {
					require.Contains(t, got.Text, s, "visible on the page")
				}
			})
		}
	}
}

func rowNaming(t *testing.T, rows []string, slug string) string {
	t.Helper()
	for _, r := range rows {
		if strings.Contains(r, slug) {
			return r
		}
	}
	t.Fatalf("no open-jobs row shows %s; rows: %q", slug, rows)
	return ""
}

// screenshot saves the page as a PNG under PROBECTL_SCREENSHOT_DIR, when set: a person looks at
// these while changing the page (docs/status-en.png came from here).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("PROBECTL_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".png"), png, 0o644))
}
