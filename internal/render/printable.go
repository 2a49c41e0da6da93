package render

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Server-chosen text (a tool's name or description, a server's name, title, version or
// instructions, an error body, a redirect's target) reaches a terminal only through the one rule
// written here. A rune a terminal would obey rather than print, or that hides or reorders what
// follows, is written as a visible escape instead:
//
//   - C0 controls (ESC, CR, BEL, backspace, ...) and DEL: \u001b, \r, \u0007, \u0008, \u007f;
//   - C1 controls (U+0080–U+009F, CSI among them: \u009b);
//   - bidi overrides, embeddings and isolates (U+202A–U+202E, U+2066–U+2069), marks, zero-width
//     and every other format character (Unicode category Cf: \u202e, \u200b, \ufeff, ...);
//   - line and paragraph separators (\u2028, \u2029), and bytes that are not UTF-8 (\xff).
//
// A cell of a table, a field of a CSV file and a line of text each escape all of them, newline and
// tab included (a newline would forge a row or a line). The streams themselves (Guard) pass what
// probectl's own output needs, newline and tab, and on a colour terminal the colours of Styles,
// and escape everything else: a command that forgets to call Printable still cannot let a server
// move the cursor, rewrite a line or hide one. JSON needs none of this: encoding/json escapes
// every control character, and a JSON reader does not interpret the rest.

// Printable returns s with every rune a terminal would not print as text written as a visible
// escape (\u001b, \r, \u202e, ...). Backslashes are left as they are: the escapes are for a person
// to read, not to be decoded.
func Printable(s string) string { return sanitize(s, keepNothing) }

// PrintablePage returns a rendered page (HTML, SVG) with the same runes escaped, but for the
// newlines and tabs of its layout. A browser obeys a bidi control as a terminal does: a server's
// name, error or tool name holding U+202E would read backwards ("Trojan Source"). Applied to the
// whole page after its template ran, it covers every text in it, a template or an SVG built by
// hand that forgets a field included. The escapes it writes (\u202e) are plain text in HTML, in
// an attribute and in a string of a script, so the page stays what it was.
func PrintablePage(page []byte) []byte {
	s := string(page)
	if clean(s, keepLines) {
		return page
	}
	return []byte(sanitize(s, keepLines))
}

// keep says which of the otherwise escaped text a writer lets through.
type keep int

const (
	keepNothing keep = 0
	keepLines   keep = 1 << iota // newline and tab: the layout of probectl's own output
	keepColour                   // the SGR sequences of Styles (colourSGR)
)

// escaped says whether r is shown as an escape rather than printed.
func escaped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// visible is the escape that stands for r. Every escape of a rune is one JSON has too (\n, \r,
// \t, \u001b, \u007f, \u202e, a surrogate pair past U+FFFF), meaning the same rune: the guarded
// stream escapes what encoding/json writes raw (DEL, C1 controls, format characters), and JSON
// output must stay valid JSON that says the same text. Only a byte that is not UTF-8, which
// encoding/json never writes, is shown as \xNN.
func visible(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r > 0xffff {
		hi, lo := utf16.EncodeRune(r)
		return fmt.Sprintf(`\u%04x\u%04x`, hi, lo)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

func sanitize(s string, k keep) string {
	if clean(s, k) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case k&keepLines != 0 && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == 0x1b && k&keepColour != 0 && colourAt(s[i:]) > 0:
			n := colourAt(s[i:])
			b.WriteString(s[i : i+n])
			size = n
		case escaped(r):
			b.WriteString(visible(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean says whether s has nothing to escape (the common case, which then costs no copy).
func clean(s string, k keep) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			continue
		}
		if c >= utf8.RuneSelf {
			return cleanRunes(s[i:], k)
		}
		if k&keepLines != 0 && (c == '\n' || c == '\t') {
			continue
		}
		return false
	}
	return true
}

func cleanRunes(s string, k keep) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || (escaped(r) && !(k&keepLines != 0 && (r == '\n' || r == '\t'))) {
			return false
		}
		i += size
	}
	return true
}

// colourSGR are the SGR parameters Styles write (bold, its reset, the foreground colours 1, 2, 3
// and 8 and their reset, the full reset): on a colour terminal these, and only these, pass. None of
// them moves the cursor, erases, conceals or sets a background.
var colourSGR = map[string]bool{"": true, "0": true, "1": true, "22": true, "31": true, "32": true,
	"33": true, "39": true, "90": true}

// colourAt returns the length of the SGR sequence of colourSGR that s starts with, 0 if it starts
// with none.
func colourAt(s string) int {
	if len(s) < 3 || s[0] != 0x1b || s[1] != '[' {
		return 0
	}
	end := strings.IndexByte(s[2:], 'm')
	if end < 0 || end > 32 {
		return 0
	}
	params := s[2 : 2+end]
	for _, p := range strings.Split(params, ";") {
		if !colourSGR[p] {
			return 0
		}
	}
	return 2 + end + 1
}

// guarded is a stream that escapes what Printable escapes, but for newline, tab and (on a colour
// terminal) the colours of Styles. A rune cut in two by a writer's buffer (encoding/csv writes in
// 4 KiB pieces) is held back until its end arrives, so that it is not taken for two bad bytes, and
// so is a colour sequence cut in two, which would otherwise be shown as an escape.
type guarded struct {
	mu    *sync.Mutex
	w     io.Writer
	k     keep
	carry *[]byte
}

func (g guarded) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	data := append(*g.carry, p...)
	cut := len(data)
	// A UTF-8 sequence is at most 4 bytes: look back at most 3 for the start of an unfinished one.
	for i := len(data) - 1; i >= 0 && i >= len(data)-3; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				cut = i
			}
			break
		}
	}
	if g.k&keepColour != 0 {
		cut = min(cut, unfinishedEscape(data[:cut]))
	}
	*g.carry = append((*g.carry)[:0:0], data[cut:]...)
	if _, err := io.WriteString(g.w, sanitize(string(data[:cut]), g.k)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// unfinishedEscape is where a colour sequence that data ends in the middle of starts (ESC, or
// ESC [ and parameters with no final byte yet), len(data) when it ends in none: a sequence cut in
// two by a writer's buffer is held back like a cut rune, and passes whole once its end arrives.
// A sequence longer than colourAt reads is no colour of ours, so none longer is held.
func unfinishedEscape(data []byte) int {
	start := bytes.LastIndexByte(data, 0x1b)
	if start < 0 || len(data)-start > 2+32 {
		return len(data)
	}
	rest := data[start+1:]
	if len(rest) == 0 {
		return start
	}
	if rest[0] != '[' {
		return len(data)
	}
	for _, c := range rest[1:] {
		if c >= 0x40 && c <= 0x7e {
			return len(data) // the sequence has ended
		}
	}
	return start
}

// flush writes what is held back: the start of a rune that never ended, as escapes.
func (g guarded) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(*g.carry) > 0 {
		_, _ = io.WriteString(g.w, sanitize(string(*g.carry), g.k))
		*g.carry = nil
	}
}

// guardedSized is a guarded stream that knows its terminal's width (see WithWidth).
type guardedSized struct {
	guarded
	width int
}

func (g guardedSized) Width() int { return g.width }

func guard(w io.Writer, k keep) io.Writer {
	if w == nil {
		return nil
	}
	g := guarded{mu: &sync.Mutex{}, w: w, k: k, carry: new([]byte)}
	if width := widthOf(w); width > 0 {
		return guardedSized{guarded: g, width: width}
	}
	return g
}

// Guard returns the streams with Out and ErrOut passing only printable text, newline and tab,
// and on a colour terminal the colours of Styles: the last line of defence, so that no command can
// print a server's escape sequence even when it forgets Printable. Execute guards the streams
// before any command runs. The progress display (Progress) keeps the raw stderr: it redraws the
// terminal with cursor movements, and shows only probectl's own counts.
func (s *Streams) Guard() *Streams {
	if s.progress != nil {
		return s // already guarded
	}
	g := *s
	g.progress = s.ErrOut
	k := keepLines
	if s.ColorEnabled() {
		k |= keepColour
	}
	g.Out, g.ErrOut = guard(s.Out, k), guard(s.ErrOut, k)
	return &g
}

// Flush writes what a guarded stream held back (the start of a rune whose end never came). Execute
// calls it once the command is done.
func (s *Streams) Flush() {
	for _, w := range []io.Writer{s.Out, s.ErrOut} {
		switch g := w.(type) {
		case guarded:
			g.flush()
		case guardedSized:
			g.flush()
		}
	}
}

// Progress is the stream a progress display redraws: stderr as it is, cursor movements allowed.
// Only probectl's own words and counts may be written to it, never a server's text.
func (s *Streams) Progress() io.Writer {
	if s.progress != nil {
		return s.progress
	}
	return s.ErrOut
}
