package main

import (
	"fmt"
	"time"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/release"
)

// waitReporter tells stderr what deploy verify --wait waits for and until when: on a terminal
// after every look, elsewhere (a CI log) once, when the wait starts.
func waitReporter(io *render.Streams) func(release.Progress) {
	said := false
	return func(p release.Progress) {
		if said && !io.ErrTTY {
			return
		}
		said = true
		fmt.Fprintln(io.ErrOut, waitWords(p))
	}
}

// waitWords: "waiting until 2026-11-30T18:25:00Z (14m30s left) for the first 2 round(s) after
// release #3 to finish: 1 started, 0 finished".
func waitWords(p release.Progress) string {
	left := max(0, p.Deadline.Sub(time.Now()))
	return fmt.Sprintf("waiting until %s (%s left) for the first %d round(s) after release #%d to finish: %d started, %d finished",
		p.Deadline.UTC().Truncate(time.Second).Format(time.RFC3339), render.Duration(left.Truncate(time.Second)),
		p.Wanted, p.ReleaseID, p.Found, p.Finished)
}
