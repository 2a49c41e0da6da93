package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/probectl/probectl/internal/archive"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/attest"
)

// archiveVerifyJSON is the documented JSON shape of 'runs verify --archive'.
type archiveVerifyJSON struct {
	Valid    bool           `json:"valid"`
	Archive  string         `json:"archive"`
	Report   archive.Report `json:"report"`
	BadLine  *int           `json:"bad_line"`
	BadRunID *int64         `json:"bad_run_id"`
	Error    *string        `json:"error"`
}

func runRunsVerifyArchive(opts *runsVerifyOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if len(opts.PublicKeys) == 0 {
		return exit.UsageError(errors.New("--public-key: at least one is required (probectl keys export KEY_ID writes one)"))
	}
	keys := map[string]ed25519.PublicKey{}
	for _, path := range opts.PublicKeys {
		data, err := readBounded(path, 64<<10)
		if err != nil {
			return exit.UsageError(fmt.Errorf("--public-key %s: %w", path, err))
		}
		pub, err := history.ParsePublicKey(data)
		if err != nil {
			return exit.UsageError(fmt.Errorf("--public-key %s: %w", path, err))
		}
		keys[attest.KeyID(pub)] = pub
	}
	fh, err := os.Open(opts.Archive)
	if err != nil {
		return exit.UsageError(fmt.Errorf("--archive: %w", err))
	}
	defer fh.Close()
	rep, err := archive.Verify(fh, keys, opts.AllowUnsigned)
	out := archiveVerifyJSON{Valid: err == nil, Archive: opts.Archive, Report: rep}
	var bad *archive.BadLineError
	if errors.As(err, &bad) {
		msg := bad.Error()
		out.BadLine, out.Error = &bad.Line, &msg
		if bad.RunID != 0 {
			out.BadRunID = &bad.RunID
		}
	} else if err != nil {
		return fmt.Errorf("read archive %s: %w", opts.Archive, err)
	}
	werr := render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		if bad != nil {
			_, werr := fmt.Fprintf(f.IO.Out, "INVALID: %s: %v\n", opts.Archive, bad)
			return werr
		}
		m := rep.Manifest
		_, werr := fmt.Fprintf(f.IO.Out, "VALID: %s: %d run(s) (%d signed, %d unsigned), %s to %s, sha256 %s\n",
			opts.Archive, rep.Runs, rep.Signed, rep.Unsigned, timeOrDash(m.First), timeOrDash(m.Last), m.SHA256)
		return werr
	}})
	if werr != nil {
		return werr
	}
	if bad != nil {
		return &silentError{code: exit.Found}
	}
	return nil
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
