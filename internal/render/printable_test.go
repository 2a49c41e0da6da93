package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrintableWritesWhatATerminalWouldObeyAsAVisibleEscape(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"search the web":                  "search the web",
		"工具 ok":                           "工具 ok",
		"\x1b[2J\x1b[1Aok\rhidden":        `\u001b[2J\u001b[1Aok\rhidden`,
		"a\u202eb\u2066c\u2069":           `a\u202eb\u2066c\u2069`,
		"csi\u009b2J nel\u0085":           `csi\u009b2J nel\u0085`,
		"bell\x07 del\x7f nul\x00":        `bell\u0007 del\u007f nul\u0000`,
		"tag\U000E0001":                   `tag\udb40\udc01`,
		"line\nbreak\ttab":                `line\nbreak\ttab`,
		"zero\u200bwidth\ufeff\u2028":     `zero\u200bwidth\ufeff\u2028`,
		"bad \xff\xfe utf-8":              `bad \xff\xfe utf-8`,
		`a backslash \x1b stays as it is`: `a backslash \x1b stays as it is`,
	} {
		assert.Equal(t, want, Printable(in), "%q", in)
	}
}

// The streams are the last line of defence: newline and tab pass, and on a colour terminal the
// colours of Styles; anything else a server could have slipped in is escaped.
func TestGuardedStreamsPassOnlyTextLayoutAndOurColours(t *testing.T) {
	t.Parallel()
	var plain, colour bytes.Buffer
	p := (&Streams{Out: &plain, ErrOut: &plain}).Guard()
	c := (&Streams{Out: &colour, ErrOut: &colour, OutTTY: true}).Guard()
	line := "\x1b[1;32mok\x1b[0m 1\ttool\n\x1b[8mhidden\x1b[0m\x1b[2K\rforged \x1b[41mbg\x1b[39m\n"
	_, _ = p.Out.Write([]byte(line))
	_, _ = c.Out.Write([]byte(line))
	assert.Equal(t, `\u001b[1;32mok\u001b[0m 1`+"\ttool\n"+`\u001b[8mhidden\u001b[0m\u001b[2K\rforged \u001b[41mbg\u001b[39m`+"\n", plain.String(),
		"no colour: every escape is shown")
	assert.Equal(t, "\x1b[1;32mok\x1b[0m 1\ttool\n"+`\u001b[8m`+"hidden\x1b[0m"+`\u001b[2K\r`+"forged "+`\u001b[41m`+"bg\x1b[39m\n", colour.String(),
		"colour: bold, green and the resets pass; conceal, erase, CR and a background do not")
}

// encoding/csv writes in 4 KiB pieces: a rune cut in two by a piece is not taken for bad bytes.
func TestAGuardedStreamKeepsARuneCutBetweenWrites(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := (&Streams{Out: &out, ErrOut: &out}).Guard()
	text := []byte("工具\u202e")
	for i := range text {
		_, err := s.Out.Write(text[i : i+1])
		require.NoError(t, err)
	}
	_, _ = s.Out.Write([]byte("\xe5"))
	s.Flush()
	assert.Equal(t, `工具\u202e\xe5`, out.String())
}

func TestCSVDefusesFormulasAndEscapesControls(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := NewCSV(&out)
	w.Write("=1+1", "+cmd", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "-12.5", "+3", "plain", "a\x1b[2Jb\nc", "")
	require.NoError(t, w.Flush())
	assert.Equal(t, `'=1+1,'+cmd,'-2+3+cmd|' /C calc'!A0,'@SUM(A1),-12.5,+3,plain,a\u001b[2Jb\nc,`+"\n", out.String())
	assert.False(t, strings.ContainsAny(out.String(), "\x1b\r"))
}

// Every colour Styles writes, on every colour profile, passes a guarded colour terminal unchanged:
// a style added or changed must be added to colourSGR, or it would show as escapes.
func TestOurOwnColoursPassTheGuard(t *testing.T) { //nolint:paralleltest // sets lipgloss's colour profile
	before := lipgloss.ColorProfile()
	t.Cleanup(func() { lipgloss.SetColorProfile(before) })
	// termenv's TrueColor, ANSI256 and ANSI profiles (0, 1, 2), without importing termenv.
	for p, set := range map[string]func(){
		"truecolor": func() { lipgloss.SetColorProfile(0) },
		"ansi256":   func() { lipgloss.SetColorProfile(1) },
		"ansi":      func() { lipgloss.SetColorProfile(2) },
	} {
		set()
		st := StylesFor(&Streams{OutTTY: true})
		for _, s := range []lipgloss.Style{st.Title, st.Pass, st.Fail, st.Warn, st.Muted} {
			out := s.Render("x")
			require.Contains(t, out, "\x1b[", "profile %s colours", p)
			assert.Equal(t, out, sanitize(out, keepColour), "profile %s", p)
		}
	}
}

// A colour sequence cut in two by a writer's buffer passes whole once its end arrives, as a cut
// rune does; one that never ends is shown as escapes when the stream is flushed.
func TestAGuardedStreamKeepsAColourCutBetweenWrites(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := (&Streams{Out: &out, ErrOut: &out, OutTTY: true}).Guard()
	for _, piece := range []string{"a\x1b", "[3", "2mok\x1b[", "0m b \x1b[1"} {
		_, err := s.Out.Write([]byte(piece))
		require.NoError(t, err)
	}
	s.Flush()
	assert.Equal(t, "a\x1b[32mok\x1b[0m b "+`\u001b[1`, out.String())
}

// A page keeps its layout (newlines, tabs), its markup and its languages; every bidi control,
// mark and other format character is shown as its escape, as on a terminal.
func TestPrintablePageEscapesBidiControlsAndKeepsTheLayout(t *testing.T) {
	t.Parallel()
	page := "<p title=\"a\u202eb\">工具\n\t\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c</p>\n"
	want := "<p title=\"a\\u202eb\">工具\n\t" + `\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c` + "</p>\n"
	assert.Equal(t, want, string(PrintablePage([]byte(page))))
	clean := []byte("<p>工具 ok</p>\n")
	assert.Equal(t, &clean[0], &PrintablePage(clean)[0], "a clean page is not copied")
}
