package statuspage

import (
	"fmt"
	"strconv"
	"time"

	"github.com/probectl/probectl/internal/status"
)

// workerLabels are the words of the page's workers section, in one language.
type workerLabels struct {
	Title, Summary, None, Worker, State, Leader, Running, Spool, Version, Host, Heartbeat string
	Alive, Dead, Stopped, DeadTitle, NoneAlive                                            string
	// Queue is a fmt format: waiting, running, to retry, retried and discarded in 24 h.
	Queue string
	// SpoolDepth is a fmt format: results, files. SetAside: files set aside for a person, said
	// after the depth (when results wait) with Sep.
	SpoolDepth, SetAside, Sep string
}

var workerWords = map[string]workerLabels{
	"en": {Title: "Workers", Summary: "%d alive of %d heard from in the last hour.",
		None: "No worker heard from in the last hour.", Worker: "Worker", State: "State", Leader: "Leader",
		Running: "Invocations running", Spool: "Spool", Version: "Version", Host: "Host", Heartbeat: "Last heartbeat",
		Alive: "alive", Dead: "dead", Stopped: "stopped",
		DeadTitle:  "no heartbeat for 60 s: its process is gone; River retries its invocations once rescued",
		NoneAlive:  "No worker is alive to run the waiting invocations: start probectl worker.",
		Queue:      "Queue: %d waiting, %d running, %d to retry; in the last 24 h %d retried, %d discarded.",
		SpoolDepth: "%d results in %d file(s)", SetAside: "%d file(s) set aside (*.bad) for a person to read", Sep: "; "},
	"zh-CN": {Title: "worker 进程", Summary: "最近一小时内有心跳的 %[2]d 个中，%[1]d 个存活。",
		None: "最近一小时内没有 worker 的心跳。", Worker: "worker", State: "状态", Leader: "主节点",
		Running: "运行中的调用", Spool: "本地暂存", Version: "版本", Host: "主机", Heartbeat: "最后心跳",
		Alive: "存活", Dead: "已失联", Stopped: "已停止",
		DeadTitle:  "超过 60 秒没有心跳：进程已不在；River 接管后会重试它的调用",
		NoneAlive:  "没有存活的 worker 来运行等待中的调用：请启动 probectl worker。",
		Queue:      "队列：%d 个等待，%d 个运行中，%d 个待重试；最近 24 小时重试 %d 个，放弃 %d 个。",
		SpoolDepth: "%d 个结果，%d 个文件", SetAside: "%d 个文件已搁置（*.bad），待人工查看", Sep: "；"},
}

// workersView is the page's workers section; nil when the database has no workers' tables or
// nothing ever ran there (a prober run by hand).
type workersView struct {
	L              workerLabels
	Summary, Queue string
	Rows           []workerRowView
	NoneAlive      bool
}

type workerRowView struct {
	ID, State, Running, Spool, Version, Host, Heartbeat, HeartbeatISO string
	Leader, Dead, SpoolAlert                                          bool
}

func newWorkersView(l *lang, r *status.Report) *workersView {
	q := r.Queue
	if q == nil || (len(r.Workers) == 0 && *q == status.Queue{}) {
		return nil
	}
	w := workerWords[l.Code]
	v := &workersView{L: w, Queue: fmt.Sprintf(w.Queue, q.Waiting, q.Running, q.Retrying, q.Retried, q.Discarded)}
	alive := 0
	for _, wk := range r.Workers {
		row := workerRowView{ID: wk.ID, Leader: wk.Leader, Version: wk.Version, Host: wk.Host,
			Running: fmt.Sprintf("%d/%d", wk.InvocationsRunning, wk.MaxWorkers), Spool: strconv.Itoa(wk.SpoolResults),
			Heartbeat: timestamp(wk.HeartbeatAt), HeartbeatISO: wk.HeartbeatAt.UTC().Format(time.RFC3339)}
		switch {
		case wk.StoppedAt != nil:
			row.State = w.Stopped
		case wk.Alive:
			row.State = w.Alive
			alive++
		default:
			row.State, row.Dead = w.Dead, true
		}
		if wk.SpoolResults > 0 {
			row.Spool, row.SpoolAlert = fmt.Sprintf(w.SpoolDepth, wk.SpoolResults, wk.SpoolFiles), true
		}
		if wk.SpoolSetAside > 0 {
			aside := fmt.Sprintf(w.SetAside, wk.SpoolSetAside)
			if wk.SpoolResults > 0 {
				aside = row.Spool + w.Sep + aside
			}
			row.Spool, row.SpoolAlert = aside, true
		}
		v.Rows = append(v.Rows, row)
	}
	v.Summary = fmt.Sprintf(w.Summary, alive, len(r.Workers))
	v.NoneAlive = r.NoWorkerAlive()
	return v
}
