package statuspage_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
)

// The page shows the workers and their queue in both languages: the dead one marked, the leader,
// what waits in a machine's spool. A database where no worker ever ran shows no such section.
func TestPagesShowTheWorkersInTheirLanguage(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return statustest.Now }})
	require.NotContains(t, get(t, h, "/status").Body, `<section id="workers">`, "no worker ever ran: no section")

	statustest.SeedWorkers(context.Background(), t, pool)
	cases := []struct {
		name, path, summary, queue, dead, spool string
	}{
		{"the English page", "/status", "2 alive of 4 heard from in the last hour.",
			"Queue: 2 waiting, 1 running, 1 to retry; in the last 24 h 3 retried, 1 discarded.", "dead", "2 results in 1 file(s); 1 file(s) set aside (*.bad) for a person to read"},
		{"the Chinese page", "/zh/status", "最近一小时内有心跳的 4 个中，2 个存活。",
			"队列：2 个等待，1 个运行中，1 个待重试；最近 24 小时重试 3 个，放弃 1 个。", "已失联", "2 个结果，1 个文件；1 个文件已搁置（*.bad），待人工查看"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, h, c.path)
			require.Equal(t, http.StatusOK, res.Code)
			section := res.Body[strings.Index(res.Body, `<section id="workers">`):]
			section = section[:strings.Index(section, "</section>")]
			require.Contains(t, section, c.summary)
			require.Contains(t, section, c.queue)
			rows := map[string]string{}
			for _, r := range strings.Split(section, "<tr")[2:] {
				for _, id := range []string{statustest.LeaderWorker, statustest.SpoolWorker, statustest.DeadWorker, statustest.StoppedWorker} {
					if strings.Contains(r, ">"+id+"<") {
						rows[id] = r
					}
				}
			}
			require.Len(t, rows, 4)
			require.Contains(t, rows[statustest.LeaderWorker], "✓")
			require.NotContains(t, rows[statustest.SpoolWorker], "✓")
			require.Contains(t, rows[statustest.DeadWorker], `class="stale"`)
			require.Contains(t, rows[statustest.DeadWorker], c.dead)
			require.NotContains(t, rows[statustest.StoppedWorker], `class="stale"`)
			require.Contains(t, rows[statustest.SpoolWorker], "<strong>"+c.spool+"</strong>")
		})
	}
}
