package statuspage

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"github.com/probectl/probectl/queries"
)

// Charts are SVG written on the server: no script, nothing loaded, so the page's CSP stands.
// Every text in them is escaped; every number is formatted here.

// outcomeColour is the fill of a run's cell: the status page's own palette.
func outcomeColour(o string) string {
	switch o {
	case "ok":
		return "#1a7f37"
	case "failed":
		return "#b42318"
	case "error":
		return "#9a6700"
	}
	return "#8d96a0"
}

// uptimeBar draws one cell per run, oldest on the left, each with its run as a tooltip.
func uptimeBar(l *pagesLang, runs []queries.Run) template.HTML {
	const cell, gap, height = 8, 2, 28
	width := max(1, len(runs)*(cell+gap))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="bar" id="uptime-bar" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`,
		width, height, width, height)
	for i, r := range runs {
		why := r.Summary
		if r.Error != nil && *r.Error != "" {
			why = *r.Error
		}
		title := fmt.Sprintf("%s %d · %s · %s: %s", l.Run, r.ID, timestamp(r.StartedAt), l.outcome(r.Outcome), why)
		fmt.Fprintf(&b, `<rect class="cell %s" x="%d" y="0" width="%d" height="%d" rx="2" fill="%s"><title>%s</title></rect>`,
			html.EscapeString(r.Outcome), i*(cell+gap), cell, height, outcomeColour(r.Outcome), html.EscapeString(title))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built from escaped text and numbers above
}

// chartPoint is one value of a time chart.
type chartPoint struct {
	At    time.Time
	Value float64
}

// timeChart draws values over [from, to] as a polyline (step: a staircase, for counts), with the
// axis' extremes written out.
func timeChart(id string, points []chartPoint, from, to time.Time, step bool, label func(float64) string, noData string) template.HTML {
	const w, h, left, bottom, top = 640, 160, 56, 20, 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" id="%s" role="img" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`, id, w, h)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="currentColor" stroke-opacity=".3"/>`, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="currentColor">%s</text>`, left, h-4, from.UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="currentColor" text-anchor="end">%s</text>`, w, h-4, to.UTC().Format("2006-01-02"))
	if len(points) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" fill="currentColor" text-anchor="middle">%s</text></svg>`,
			(w+left)/2, h/2, html.EscapeString(noData))
		return template.HTML(b.String()) //nolint:gosec // escaped above
	}
	top2 := 0.0
	for _, p := range points {
		top2 = max(top2, p.Value)
	}
	if top2 == 0 {
		top2 = 1
	}
	span := to.Sub(from).Seconds()
	x := func(t time.Time) float64 { return left + (w-left)*t.Sub(from).Seconds()/span }
	y := func(v float64) float64 { return top + (h-bottom-top)*(1-v/top2) }
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="currentColor" text-anchor="end">%s</text>`, left-4, top+10, html.EscapeString(label(top2)))
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="currentColor" text-anchor="end">%s</text>`, left-4, h-bottom, html.EscapeString(label(0)))
	b.WriteString(`<polyline fill="none" stroke="#0969da" stroke-width="1.5" points="`)
	for i, p := range points {
		if step && i > 0 {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(p.At), y(points[i-1].Value))
		}
		fmt.Fprintf(&b, "%.1f,%.1f ", x(p.At), y(p.Value))
	}
	if step {
		fmt.Fprintf(&b, "%.1f,%.1f", x(to), y(points[len(points)-1].Value))
	}
	b.WriteString(`"/></svg>`)
	return template.HTML(b.String()) //nolint:gosec // numbers and escaped text only
}

// badge is a small SVG to embed: the kind on the left, uptime or the last outcome on the right.
func badge(kind, text, colour string) []byte {
	lw, rw := 8+7*len(kind), 10+7*len(text)
	return fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s">`+
		`<title>%s: %s</title><rect width="%d" height="20" fill="#555"/><rect x="%d" width="%d" height="20" fill="%s"/>`+
		`<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">`+
		`<text x="%d" y="14">%s</text><text x="%d" y="14">%s</text></g></svg>`,
		lw+rw, html.EscapeString(kind), html.EscapeString(text), html.EscapeString(kind), html.EscapeString(text),
		lw, lw, rw, colour, 4, html.EscapeString(kind), lw+5, html.EscapeString(text))
}
