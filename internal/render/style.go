package render

import "github.com/charmbracelet/lipgloss"

// Styles are the few ways probectl colours text. With colour off every style prints text as it is,
// so tests and pipes see plain text.
type Styles struct {
	Title lipgloss.Style
	Pass  lipgloss.Style
	Fail  lipgloss.Style
	Warn  lipgloss.Style
	Muted lipgloss.Style
}

// StylesFor returns the styles for the streams: coloured on a terminal, plain elsewhere.
func StylesFor(s *Streams) Styles {
	if !s.ColorEnabled() {
		plain := lipgloss.NewStyle()
		return Styles{Title: plain, Pass: plain, Fail: plain, Warn: plain, Muted: plain}
	}
	return Styles{
		Title: lipgloss.NewStyle().Bold(true),
		Pass:  lipgloss.NewStyle().Foreground(lipgloss.Color("2")).Bold(true),
		Fail:  lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		Warn:  lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		Muted: lipgloss.NewStyle().Foreground(lipgloss.Color("8")),
	}
}
