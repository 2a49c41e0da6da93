package statuspage

// pagesLang is one language of the server pages (/servers, /servers/SLUG): every label a person
// reads. The Chinese terms follow lang's (incident.zh.md).
type pagesLang struct {
	Code, Prefix, OtherLanguage, StatusLink string

	DirTitle, DirIntro, CountsTitle, NeverRun, FailingTitle, FailingNone, ExpiringTitle, ExpiringNone string
	// More is a fmt format taking how many are not listed.
	More, Servers, Server, Kind, Status, LastOutcome, FailingSince, LastRun, Uptime30d, CertExpiry string
	SortBy, Page, Previous, Next                                                                   string

	Title, Settings, NextCheck, UptimeTitle, Latency, LatencyOK, Certificate, DaysLeft, Tools,
	ToolsNone, ToolsSince, ToolsAuth, BarTitle, BarLegend, LatencyTitle, ToolsTitle, LastRuns, NoRuns,
	Run, Started, Outcome, Duration, Why, NoData, StatusChange, NotFound string

	Outcomes map[string]string
}

var pagesEnglish = pagesLang{
	Code: "en", Prefix: "", OtherLanguage: "中文", StatusLink: "Status",
	DirTitle: "Servers", DirIntro: "Every figure comes from stored runs; uptime leaves out runs at probectl's own fault.",
	CountsTitle: "Active servers by last outcome", NeverRun: "never run",
	FailingTitle: "Failing now", FailingNone: "No server is failing.",
	ExpiringTitle: "Certificates expiring within 14 days", ExpiringNone: "No certificate expires within 14 days.",
	More: "%d more not listed.", Servers: "servers", Server: "Server", Kind: "Kind", Status: "Status",
	LastOutcome: "Last outcome", FailingSince: "Failing since", LastRun: "Last run", Uptime30d: "Uptime 30 d",
	CertExpiry: "Certificate until", SortBy: "Sort by", Page: "Page", Previous: "previous", Next: "next",

	Title: "Server", Settings: "Settings", NextCheck: "Next check", UptimeTitle: "Uptime",
	Latency: "Latency", LatencyOK: "p50 %s, p95 %s (ok checks, 30 d)", Certificate: "Certificate",
	DaysLeft: "%s (%d days left)", Tools: "Tools", ToolsNone: "none listed", ToolsAuth: "auth required, tools not verified", ToolsSince: "%d, since %s",
	BarTitle: "Last 90 runs", BarLegend: "Oldest on the left; hover a cell for its run.",
	LatencyTitle: "Check duration over 30 days (ok checks)", ToolsTitle: "Tool count over 30 days",
	LastRuns: "Last runs", NoRuns: "No runs yet.", Run: "Run", Started: "Started", Outcome: "Outcome",
	Duration: "Duration", Why: "Why", NoData: "no data", StatusChange: "%s by %s at %s: %s",
	NotFound: "No server has this slug.",
	Outcomes: map[string]string{"ok": "ok", "failed": "failed", "error": "error", "": "never run"},
}

var pagesChinese = pagesLang{
	Code: "zh-CN", Prefix: "/zh", OtherLanguage: "English", StatusLink: "状态",
	DirTitle: "server 列表", DirIntro: "所有数字都来自已存的 run；可用率不计 probectl 自身造成的 run。",
	CountsTitle: "按最近一次结果统计的在用 server", NeverRun: "从未检查",
	FailingTitle: "正在失败", FailingNone: "没有正在失败的 server。",
	ExpiringTitle: "14 天内到期的证书", ExpiringNone: "没有 14 天内到期的证书。",
	More: "另有 %d 个没有列出。", Servers: "个 server", Server: "server", Kind: "类型", Status: "状态",
	LastOutcome: "最近结果", FailingSince: "失败开始于", LastRun: "最近一次 run", Uptime30d: "30 天可用率",
	CertExpiry: "证书到期", SortBy: "排序", Page: "页", Previous: "上一页", Next: "下一页",

	Title: "server", Settings: "设置", NextCheck: "下次检查", UptimeTitle: "可用率",
	Latency: "延迟", LatencyOK: "p50 %s，p95 %s（30 天内成功的检查）", Certificate: "证书",
	DaysLeft: "%s（还剩 %d 天）", Tools: "工具", ToolsNone: "未列出", ToolsAuth: "需要授权，工具未验证", ToolsSince: "%d 个，自 %s 起",
	BarTitle: "最近 90 次 run", BarLegend: "最左边最早；鼠标悬停可看每次 run。",
	LatencyTitle: "30 天内的检查用时（成功的检查）", ToolsTitle: "30 天内的工具数",
	LastRuns: "最近的 run", NoRuns: "还没有 run。", Run: "run", Started: "开始时间", Outcome: "结果",
	Duration: "用时", Why: "原因", NoData: "无数据", StatusChange: "%s，由 %s 于 %s 设置：%s",
	NotFound: "没有这个 slug 的 server。",
	Outcomes: map[string]string{"ok": "成功", "failed": "失败", "error": "出错", "": "从未检查"},
}

func (l *pagesLang) outcome(o string) string {
	if s, ok := l.Outcomes[o]; ok {
		return s
	}
	return o
}
