package render

import (
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
)

// Streams are the three standard streams plus what we know about them. Commands write data to Out
// and progress or logs to ErrOut, never the other way round, so that `probectl ... -o json | jq`
// always sees clean data.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// OutTTY and ErrTTY say whether the streams are terminals: colour and progress only go to
	// terminals.
	OutTTY bool
	ErrTTY bool
	InTTY  bool
	// NoColor is set by --no-color or NO_COLOR.
	NoColor bool
	// Zone is where tables and text show times (--tz, PROBECTL_TZ); nil means UTC. JSON and CSV
	// ignore it.
	Zone *time.Location

	// progress is stderr before Guard wrapped it: the progress display's (Progress).
	progress io.Writer
}

// System returns the process's own streams.
func System() *Streams {
	outTTY := isTerminal(os.Stdout)
	return &Streams{
		In:     os.Stdin,
		Out:    terminalOut(os.Stdout, outTTY),
		ErrOut: os.Stderr,
		OutTTY: outTTY,
		ErrTTY: isTerminal(os.Stderr),
		InTTY:  isTerminal(os.Stdin),
	}
}

// ColorEnabled says whether stdout may carry ANSI colour.
func (s *Streams) ColorEnabled() bool { return s.OutTTY && !s.NoColor }

// CanPrompt says whether we may ask the user a question.
func (s *Streams) CanPrompt() bool { return s.InTTY && s.OutTTY }

func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}
