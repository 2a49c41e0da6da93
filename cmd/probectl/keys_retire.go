package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

type keysRetireOptions struct {
	f      *factory
	At     string
	DryRun bool
	Yes    bool
}

func newKeysRetireCmd(f *factory) *cobra.Command {
	opts := &keysRetireOptions{f: f}
	cmd := &cobra.Command{
		Use:   "retire KEY_ID [--at TIME]",
		Short: "Retire a signing key: nothing it signs from then on verifies",
		Long: `Retire a registered signing key from now on, or from --at (an RFC 3339 time or a duration back
from now, such as 6h or 2d: when a key leaked). From that moment:

  - a 'run round' started afterwards refuses to sign with it (exit 2);
  - 'deploy verify' refuses every run it signed whose job finished at or after that moment
    (envelopes_valid, by the database's clock), while the runs it signed before keep verifying:
    a rotation does not invalidate the past.

A retirement only ever moves earlier: retiring a retired key again from an earlier moment (a leak
found after a rotation) moves it there; from a later one changes nothing, and says so. Only
signing_keys is written. Rotate by generating the new key first (probectl keys generate), moving
the probes to it, then retiring the old one once the rounds signing with it have finished: a round
checks its key when it starts, so the runs a running round signs after the retirement fail
verification.

On a terminal it says what will change and asks for confirmation (--yes does not ask; off a
terminal, in scripts, it does not ask). --dry-run says what would change and changes nothing.

-o json prints {"key_id", "retired_at", "previously_retired_at", "changed", "dry_run"}: changed is false
when nothing was changed; previously_retired_at is null for a key that was not retired.`,
		Example: `  probectl keys retire ed25519:3f9a0c1d2b4e5f60
  probectl keys retire ed25519:3f9a0c1d2b4e5f60 --at 2026-11-28T14:05:00Z   # leaked then
  probectl keys retire ed25519:3f9a0c1d2b4e5f60 --dry-run   # what would change
  probectl keys retire ed25519:3f9a0c1d2b4e5f60 --yes -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeysRetire(cmd.Context(), opts, args[0])
		},
	}
	cmd.Flags().StringVar(&opts.At, "at", "", "retire the key from this time on (RFC 3339 or a duration back from now; default now)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "say what would change, and change nothing")
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation on a terminal")
	return cmd
}

// keyRetiredJSON is the documented JSON shape of 'keys retire -o json'.
type keyRetiredJSON struct {
	KeyID               string     `json:"key_id"`
	RetiredAt           time.Time  `json:"retired_at"`
	PreviouslyRetiredAt *time.Time `json:"previously_retired_at"`
	Changed             bool       `json:"changed"`
	DryRun              bool       `json:"dry_run"`
}

func runKeysRetire(ctx context.Context, opts *keysRetireOptions, keyID string) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	req := keys.Retirement{KeyID: keyID, Now: f.now()}
	if opts.At != "" {
		t, err := parseTimeFlag("at", opts.At, req.Now)
		if err != nil {
			return err
		}
		req.At = &t
	}
	// Before connecting: a retirement from the future is refused without a database.
	if err := req.Validate(); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	var r queries.KeyRetirement
	if opts.DryRun || (!opts.Yes && f.IO.CanPrompt()) {
		r, err = keys.Preview(ctx, pool, req)
		if err == nil && !opts.DryRun && r.Changed() {
			fmt.Fprintln(f.IO.ErrOut, retireWords(keyID, r, true))
			err = askYes(f, "retire it?", "keys retire cancelled; nothing changed")
		}
	}
	if err == nil && !opts.DryRun {
		r, err = keys.Retire(ctx, pool, req)
	}
	if errors.Is(err, queries.ErrNoSuchKey) {
		return exit.UsageError(fmt.Errorf("no signing key %q is registered; 'probectl keys list' shows the keys", keyID))
	}
	if err != nil {
		return err
	}
	switch {
	case r.KeysLeft > 0:
	case opts.DryRun:
		fmt.Fprintln(f.IO.ErrOut, "warning: it would leave no signing key that rounds may sign with; 'probectl keys generate' makes one")
	default:
		fmt.Fprintln(f.IO.ErrOut, "warning: no signing key is left that rounds may sign with; 'probectl keys generate' makes one")
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: keyRetiredJSON{KeyID: keyID, RetiredAt: r.RetiredAt, PreviouslyRetiredAt: r.Before, Changed: r.Changed(),
			DryRun: opts.DryRun},
		Text: func() error {
			_, err := fmt.Fprintln(f.IO.Out, retireWords(keyID, r, opts.DryRun))
			return err
		},
	})
}

// retireWords says what a retirement did, or would do (dryRun).
func retireWords(keyID string, r queries.KeyRetirement, dryRun bool) string {
	when := r.RetiredAt.Format(time.RFC3339Nano)
	switch {
	case !r.Changed() && dryRun:
		return fmt.Sprintf("signing key %s was retired already, at %s; nothing would change (a retirement only moves earlier)", keyID, when)
	case !r.Changed():
		return fmt.Sprintf("signing key %s was retired already, at %s; nothing changed (a retirement only moves earlier)", keyID, when)
	case r.Before != nil && dryRun:
		return fmt.Sprintf("would move the retirement of signing key %s earlier, from %s to %s: runs it signed that finished from then on would fail verification",
			keyID, r.Before.Format(time.RFC3339Nano), when)
	case r.Before != nil:
		return fmt.Sprintf("moved the retirement of signing key %s earlier, from %s to %s: runs it signed that finished from then on fail verification",
			keyID, r.Before.Format(time.RFC3339Nano), when)
	case dryRun:
		return fmt.Sprintf("would retire signing key %s from %s on: runs it signs from then on would fail verification", keyID, when)
	default:
		return fmt.Sprintf("retired signing key %s from %s on: runs it signs from then on fail verification", keyID, when)
	}
}
