package statuspage

import (
	"time"

	"github.com/probectl/probectl/audit"
	"github.com/probectl/probectl/internal/render"
)

// lang is one language of the page: every label a person reads, and how times and durations are
// written. The Chinese labels use the terms of the project's incident write-up (incident.zh.md):
// 任务 (job), 轮次 (round), 领取 (claim), 未结束的任务 (open job), 在途窗口 (in-flight window),
// 到期 (due), 扇出 (fan-out), 调用 (invocation), 重复领取 (duplicate claim).
type lang struct {
	Code string // the lang attribute
	Path string // where this language's page lives

	Title, Refreshes, TimesUTC, GeneratedAt, OtherLanguage, Unavailable, UnavailableHint string

	CardDue, CardOpen, CardStale, CardDuplicates string

	Release, NoRelease, Version, Kind, DeployedAt, DeployedBy, Fanout, ClaimLimit, Concurrency,
	MinSpacing, FinishMode string

	Due, DueNone, DueCount, DueHeld, DueOldest string
	// DueDetail is a fmt format taking how long the oldest server has been due and since when.
	DueDetail string
	// FullStop ends the sentence that gives the report's time.
	FullStop string
	// Standby is a fmt format taking the replay lag of the hot standby the page reads.
	Standby string

	Open, OpenNone, Job, Server, Round, Invocation, RequestedAt, Age, State string
	StateOpen, StateLeased, StateStale, StateAdvanced                       string
	StaleLegend, AdvancedLegend                                             string
	// MoreJobs and MorePairs are fmt formats taking the number not listed.
	MoreJobs, MorePairs string

	Rounds, RoundsNone, Started, Trigger, Jobs, Runs, Servers, Failures, OpenJobs, Duration, Running string
	// Dead marks an unfinished round whose heartbeat stopped: its process is gone.
	Dead, DeadTitle string
	// Recovered marks a dead round none of whose jobs is open: runs recover stored them.
	Recovered string
	// Degraded marks a round the storm guard judged degraded: its failures counted toward no
	// server's down threshold.
	Degraded, DegradedTitle string
	// Lost says a round's checks lost (jobs closed as abandoned without a run), whatever its state:
	// LostOne for one, LostMany a fmt format taking the number.
	LostOne, LostMany, LostTitle string

	Duplicates, DuplicatesNone, FirstJob, SecondJob, SecondRequested, RequestGap, GapAfterFinish, Class string
	Classes                                                                                             map[audit.Class]string
	Triggers                                                                                            map[string]string

	Units render.DurationUnits
}

var english = lang{
	Code: "en", Path: "/status",
	Title: "probectl status", Refreshes: "Refreshes every 30 s.", TimesUTC: "All times UTC.",
	GeneratedAt: "As of", OtherLanguage: "中文",
	Standby:         "Read on a hot standby, %s behind its primary.",
	Unavailable:     "The database could not be read.",
	UnavailableHint: "The page will try again at the next refresh; probectl serve logs the error.",

	CardDue: "due servers", CardOpen: "open jobs", CardStale: "stale jobs", CardDuplicates: "unexplained duplicate pairs, 24 h",

	Release: "Active release", NoRelease: "No active release.", Version: "Version", Kind: "Kind",
	DeployedAt: "Deployed at", DeployedBy: "Deployed by", Fanout: "Fan-out (messages per round)",
	ClaimLimit: "Claim limit (servers per invocation)", Concurrency: "Concurrency (checks at a time)",
	MinSpacing: "Minimum spacing", FinishMode: "Finish mode",

	Due: "Due servers", DueNone: "No server is due.", DueCount: "Due", DueHeld: "of which a round holds (open job)",
	DueOldest: "Waiting longest", DueDetail: " (due for %s, since %s)", FullStop: ".",

	Open: "Open jobs", OpenNone: "No open jobs.", Job: "Job", Server: "Server", Round: "Round",
	Invocation: "Invocation", RequestedAt: "Requested", Age: "Age", State: "State",
	StateOpen: "open", StateLeased: "in flight", StateStale: "stale", StateAdvanced: "advanced, not finished",
	StaleLegend: "stale: still open after the 15-minute in-flight window, so its probe is presumed dead; " +
		"the next claim closes it as abandoned.",
	AdvancedLegend: "advanced, not finished: the server's next check was already moved on but the job " +
		"was never marked finished: a probe that died between its two writes. Nothing checks the server " +
		"twice; the job stays open until the in-flight window ends.",
	MoreJobs:  "%d more open jobs are not listed (the oldest are shown).",
	MorePairs: "%d more pairs are not listed (probectl audit duplicates --since 24h lists them all).",

	Rounds: "Recent rounds", RoundsNone: "No rounds yet.", Started: "Started", Trigger: "Trigger",
	Jobs: "Jobs", Runs: "Runs", Servers: "Servers", Failures: "Failures", OpenJobs: "Open",
	Duration: "Duration", Running: "running",
	Dead: "dead", DeadTitle: "no heartbeat for 60 s: its process is gone; its open jobs wait for the in-flight window",
	Recovered: "recovered",
	Degraded:  "degraded", DegradedTitle: "too many of the round's checks failed at once: its failures counted toward no server's down threshold",
	LostOne: "1 check lost", LostMany: "%d checks lost",
	LostTitle: "jobs the round claimed that were closed as abandoned without a run: checks made, or not, and not stored; a result waiting in a spool is stored by its next replay (runs recover), and the count falls",

	Duplicates:     "Duplicate claims in the last 24 h (10-minute window)",
	DuplicatesNone: "No duplicate claims.", FirstJob: "First job", SecondJob: "Second job",
	SecondRequested: "Second requested", RequestGap: "Request gap", GapAfterFinish: "After first finished",
	Class: "Class",
	Classes: map[audit.Class]string{
		audit.ClassAfterFinish: "claimed after finish", audit.ClassOverlap: "overlap",
		audit.ClassOpen: "first still open", audit.ClassExplained: "explained re-check",
		audit.ClassFailover: "database failover",
	},
	Triggers: map[string]string{"cron": "cron", "manual": "manual"},

	Units: render.English,
}

var chinese = lang{
	Code: "zh-CN", Path: "/zh/status",
	Title: "probectl 状态", Refreshes: "每 30 秒自动刷新。", TimesUTC: "时间均为 UTC。",
	GeneratedAt: "数据时间", OtherLanguage: "English",
	Standby:         "读自热备库，落后主库 %s。",
	Unavailable:     "读不到数据库。",
	UnavailableHint: "页面会在下次刷新时重试；错误记录在 probectl serve 的日志里。",

	CardDue: "到期的 server", CardOpen: "未结束的任务", CardStale: "已超时的任务", CardDuplicates: "无法解释的重复领取（24 小时）",

	Release: "当前发布", NoRelease: "没有生效的发布。", Version: "版本", Kind: "类型",
	DeployedAt: "部署时间", DeployedBy: "部署人", Fanout: "扇出（每轮的队列消息数）",
	ClaimLimit: "每个调用最多领取的 server 数", Concurrency: "每个调用同时检查的 server 数",
	MinSpacing: "最小间隔", FinishMode: "结束方式",

	Due: "到期的 server", DueNone: "没有到期的 server。", DueCount: "到期", DueHeld: "其中已有未结束任务（正在检查）",
	DueOldest: "等待最久的", DueDetail: "（已到期 %s，自 %s 起）", FullStop: "。",

	Open: "未结束的任务", OpenNone: "没有未结束的任务。", Job: "任务", Server: "server", Round: "轮次",
	Invocation: "调用", RequestedAt: "请求时间", Age: "已持续", State: "状态",
	StateOpen: "未结束", StateLeased: "检查中", StateStale: "已超时", StateAdvanced: "已推后、未结束",
	StaleLegend: "已超时：超过 15 分钟的在途窗口仍未结束，它的探测器多半已经停了；" +
		"下一次领取会把它标为已放弃（abandoned）。",
	AdvancedLegend: "已推后、未结束：这台 server 的下次检查时间已经推后，任务却没有标为结束，" +
		"说明探测器停在了两次写入之间。不会有 server 被检查两次；任务会一直未结束，直到在途窗口过去。",
	MoreJobs:  "另有 %d 个未结束的任务没有列出（只列出最早的）。",
	MorePairs: "另有 %d 对没有列出（probectl audit duplicates --since 24h 会全部列出）。",

	Rounds: "最近的轮次", RoundsNone: "还没有轮次。", Started: "开始时间", Trigger: "触发方式",
	Jobs: "任务", Runs: "run", Servers: "server", Failures: "失败", OpenJobs: "未结束",
	Duration: "用时", Running: "进行中",
	Dead: "已失联", DeadTitle: "超过 60 秒没有心跳：进程已不在，未完成的任务等待在途窗口结束",
	Recovered: "已恢复",
	Degraded:  "降级", DegradedTitle: "本轮同时失败的检查过多：其失败不计入任何服务器的宕机阈值",
	LostOne: "丢失 1 次检查", LostMany: "丢失 %d 次检查",
	LostTitle: "本轮领取的任务在途超时被关闭且没有 run：检查的结果没有存下；仍在本地暂存中的结果会在下次回放（runs recover）时存下，计数随之减少",

	Duplicates:     "最近 24 小时的重复领取（十分钟窗口）",
	DuplicatesNone: "没有重复领取。", FirstJob: "第一个任务", SecondJob: "第二个任务",
	SecondRequested: "第二次请求时间", RequestGap: "请求间隔", GapAfterFinish: "距第一个任务结束",
	Class: "类别",
	Classes: map[audit.Class]string{
		audit.ClassAfterFinish: "结束后被再次领取", audit.ClassOverlap: "两次重叠",
		audit.ClassOpen: "第一个未结束", audit.ClassExplained: "有解释的重新检查",
		audit.ClassFailover: "数据库故障切换",
	},
	Triggers: map[string]string{"cron": "cron", "manual": "手动"},

	Units: render.DurationUnits{Day: "天", Hour: "小时", Minute: "分", Second: "秒"},
}

// duration writes d in this language.
func (l *lang) duration(d time.Duration) string { return render.DurationIn(d, l.Units) }

// timestamp writes t the way both pages show it: UTC, to the second (or the millisecond when it
// has a fraction, as duplicate claims do).
func timestamp(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond() != 0 {
		return t.Format("2006-01-02 15:04:05.000")
	}
	return t.Format("2006-01-02 15:04:05")
}
