package statuspage

import (
	"fmt"
	"time"

	"github.com/probectl/probectl/internal/status"
)

// alertLabels are the words of the page's open-alerts section, in one language.
type alertLabels struct {
	Title, Server, Type, State, Opened, ID string
	// More is a fmt format: how many open alerts the page does not list.
	More string
}

var alertWords = map[string]alertLabels{
	"en": {Title: "Open alerts", Server: "Server", Type: "Alert", State: "State", Opened: "Open since", ID: "Event",
		More: "... and %d more: probectl alerts list --open"},
	"zh-CN": {Title: "未恢复的告警", Server: "服务器", Type: "告警", State: "状态", Opened: "开始时间", ID: "事件",
		More: "……还有 %d 个：probectl alerts list --open"},
}

// alertsView is the page's open-alerts section; nil when no alert is open.
type alertsView struct {
	L    alertLabels
	Rows []alertRowView
	More string
}

type alertRowView struct {
	ID, Type, Server, State, Opened, OpenedISO string
}

func newAlertsView(l *lang, r *status.Report) *alertsView {
	if len(r.Alerts) == 0 {
		return nil
	}
	v := &alertsView{L: alertWords[l.Code]}
	for _, a := range r.Alerts {
		v.Rows = append(v.Rows, alertRowView{ID: a.ID, Type: a.Type, Server: a.Server, State: a.State,
			Opened: timestamp(a.OpenedAt), OpenedISO: a.OpenedAt.UTC().Format(time.RFC3339)})
	}
	if more := r.AlertsTotal - len(r.Alerts); more > 0 {
		v.More = fmt.Sprintf(v.L.More, more)
	}
	return v
}
