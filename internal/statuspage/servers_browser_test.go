package statuspage_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// serveHistory runs the real server over the history scenario and returns its base URL.
func serveHistory(t *testing.T) string {
	t.Helper()
	return serveSeeded(t, func(pool *pgxpool.Pool) { seedHistory(t, pool) }, historyNow)
}

// seenServer is what a person sees on a server's page.
type seenServer struct {
	Lang     string   `json:"lang"`
	Text     string   `json:"text"`
	Cells    int      `json:"cells"`
	Titles   []string `json:"titles"`
	BarWidth float64  `json:"bar_width"`
	Overflow int      `json:"overflow"`
}

const seeServerScript = `({
  lang: document.documentElement.lang,
  text: document.body.innerText,
  cells: document.querySelectorAll('#uptime-bar rect').length,
  titles: Array.from(document.querySelectorAll('#uptime-bar rect title')).map(t => t.textContent),
  bar_width: document.querySelector('#uptime-bar').getBoundingClientRect().width,
  overflow: document.documentElement.scrollWidth - window.innerWidth,
})`

func TestABrowserShowsTheFailingRunsReasonAndTheUptimeBarInBothLanguages(t *testing.T) {
	base := serveHistory(t)
	ctx := browser(t)
	for _, c := range []struct{ name, path, lang, failed, switchTo string }{
		{"in English", "/servers/weather", "en", "failed", "中文"},
		{"in Chinese", "/zh/servers/weather", "zh-CN", "失败", "English"},
	} {
		for _, screen := range []struct {
			name          string
			width, height int64
		}{{"on a laptop", 1280, 900}, {"on a phone", 390, 844}} {
			t.Run(c.name+" "+screen.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(screen.width, screen.height),
					chromedp.Navigate(base+c.path)))
				got, err := chromedp.Run(ctx, chromedp.Evaluate[seenServer](seeServerScript))
				require.NoError(t, err)
				screenshot(t, ctx, "servers-weather-"+c.lang+"-"+screen.name)

				require.Equal(t, c.lang, got.Lang)
				require.Contains(t, got.Text, reason404, "the failing run's reason, in the last runs")
				require.Contains(t, got.Text, c.failed)
				require.Contains(t, got.Text, c.switchTo)
				require.Equal(t, 6, got.Cells, "the uptime bar: one cell per run")
				require.Greater(t, got.BarWidth, 0.0, "the bar is drawn")
				require.Contains(t, got.Titles[5], reason404, "the newest cell's tooltip says why it failed")
				require.LessOrEqual(t, got.Overflow, 0, "nothing to scroll sideways")
			})
		}
	}
}
