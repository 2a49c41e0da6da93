package render

import (
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// sized is a stream that knows the width of the terminal behind it, in columns.
type sized struct {
	io.Writer
	width int
}

func (s sized) Width() int { return s.width }

// WithWidth returns w as a stream of the given width: tables written to it fit in that many
// columns. System gives it to a terminal's stdout; tests give it to a buffer to play a terminal.
func WithWidth(w io.Writer, width int) io.Writer { return sized{Writer: w, width: width} }

// widthOf is the width a table written to w must fit in; 0: no limit (a pipe, a file).
func widthOf(w io.Writer) int {
	if s, ok := w.(interface{ Width() int }); ok {
		return s.Width()
	}
	return 0
}

// terminalOut is stdout as System gives it: with its width when it is a terminal that says it.
func terminalOut(f *os.File, tty bool) io.Writer {
	if !tty {
		return f
	}
	if w, _, err := term.GetSize(f.Fd()); err == nil && w > 0 {
		return WithWidth(f, w)
	}
	return f
}
