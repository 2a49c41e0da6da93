package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/check"
)

type runsVerifyOptions struct {
	f          *factory
	File       string
	PublicKeys []string
	Archive    string
	// AllowUnsigned: an archive's unsigned runs are counted, not failed (runs_verify_archive.go).
	AllowUnsigned bool
}

func newRunsVerifyCmd(f *factory) *cobra.Command {
	opts := &runsVerifyOptions{f: f}
	cmd := &cobra.Command{
		Use:   "verify {FILE | --archive FILE} --public-key FILE...",
		Short: "Verify an exported run envelope offline, with the public key alone",
		Long: `Verify a run's DSSE envelope (as 'probectl runs show ID --envelope' prints it) against one
ed25519 public key in a PKIX "BEGIN PUBLIC KEY" PEM file (as 'probectl keys export KEY_ID'
prints it). It reads the two files and nothing else: it never connects to a database, even when
one is configured, so a third party can run it.

A retired key's export begins with a line "Retired-At: <RFC 3339 time>" before its PEM block: a
run whose signed statement says its check finished at or after that time is INVALID (signed
after the key's retirement), as 'runs show' and 'deploy verify' judge it; the runs the key
signed before keep verifying.

With --archive FILE it verifies a whole archive written by 'probectl runs export' (gzip, zstd
or plain, known by its first bytes; a zstd archive asking for a window over 8 MiB is refused, so
a hostile one cannot take the memory): every line's envelope, against any of the --public-key files given (repeat the flag for the keys
of a rotation), that each envelope is its line's own job and server, and the trailing manifest
(count, first and last time, SHA-256 of the content). Unsigned runs fail unless --allow-unsigned.

Exit status: 0 the envelope (every line) verifies, 1 it does not (the reason, and for an archive
the first bad line, is printed), 2 an input cannot be read (not a PEM public key, not a DSSE
envelope, no such file).`,
		Example: `  probectl runs show 1234 --envelope > run-1234.json
  probectl keys export ed25519:3f9a0c1d2b4e5f60 > probectl.pub
  probectl runs verify run-1234.json --public-key probectl.pub
  probectl runs verify run-1234.json --public-key probectl.pub -o json
  probectl runs verify --archive runs-2026-09.jsonl.gz --public-key old.pub --public-key new.pub`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Archive != "" {
				if len(args) > 0 {
					return exit.UsageError(errors.New("give an envelope FILE or --archive FILE, not both"))
				}
				return runRunsVerifyArchive(opts)
			}
			if len(args) != 1 {
				return exit.UsageError(errors.New("an envelope FILE (or --archive FILE) is required"))
			}
			opts.File = args[0]
			return runRunsVerify(opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.PublicKeys, "public-key", nil, "PEM file of an ed25519 public key (required; repeat with --archive)")
	cmd.Flags().StringVar(&opts.Archive, "archive", "", "verify every line of this archive ('runs export' wrote it)")
	cmd.Flags().BoolVar(&opts.AllowUnsigned, "allow-unsigned", false, "with --archive: count unsigned runs instead of failing on them")
	return cmd
}

// runVerifyJSON is the documented JSON shape of 'runs verify'.
type runVerifyJSON struct {
	Valid bool   `json:"valid"`
	KeyID string `json:"key_id"`
	// KeyRetiredAt is the key file's Retired-At (a retired key's export): runs checked from then
	// on are invalid.
	KeyRetiredAt *time.Time `json:"key_retired_at"`
	Error        *string    `json:"error"`
	JobID        *int64     `json:"job_id"`
	RoundID      *int64     `json:"round_id"`
	Server       *string    `json:"server"`
	Outcome      *string    `json:"outcome"`
}

// maxEnvelopeBytes bounds the envelope file: a run holds at most 8 requests, so a real one is a
// few kilobytes.
const maxEnvelopeBytes = 4 << 20

func runRunsVerify(opts *runsVerifyOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if len(opts.PublicKeys) != 1 {
		return exit.UsageError(errors.New("--public-key: one is required (probectl keys export KEY_ID writes one)"))
	}
	pemData, err := readBounded(opts.PublicKeys[0], 64<<10)
	if err != nil {
		return exit.UsageError(fmt.Errorf("--public-key: %w", err))
	}
	env, err := readBounded(opts.File, maxEnvelopeBytes)
	if err != nil {
		return exit.UsageError(fmt.Errorf("envelope file: %w", err))
	}
	st, key, err := history.VerifyExported(env, pemData)
	keyID := key.ID
	var bad *history.BadInputError
	if errors.As(err, &bad) {
		return exit.UsageError(fmt.Errorf("%s: %w", opts.File, err))
	}
	out := runVerifyJSON{Valid: err == nil, KeyID: keyID, KeyRetiredAt: key.RetiredAt}
	if err != nil {
		msg := err.Error()
		out.Error = &msg
	} else {
		p := st.Predicate
		out.JobID, out.RoundID, out.Server, out.Outcome = &p.JobID, &p.RoundID, &p.Server.Slug, &p.Result.Outcome
	}
	werr := render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		if err != nil {
			_, werr := fmt.Fprintf(f.IO.Out, "INVALID: %s does not verify with key %s: %v\n", opts.File, keyID, err)
			return werr
		}
		p := st.Predicate
		_, werr := fmt.Fprintf(f.IO.Out, "VALID: signed by %s: job %d of round %d checked %s (%s): %s\n",
			keyID, p.JobID, p.RoundID, p.Server.Slug, check.RedactURL(p.Server.URL), p.Result.Outcome)
		return werr
	}})
	if werr != nil {
		return werr
	}
	if err != nil {
		return &silentError{code: exit.Found}
	}
	return nil
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is more than the %d bytes a valid input can be", path, limit)
	}
	return data, nil
}
