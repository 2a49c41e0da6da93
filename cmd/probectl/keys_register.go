package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/attest"
)

type keysRegisterOptions struct {
	f    *factory
	File string
}

func newKeysRegisterCmd(f *factory) *cobra.Command {
	opts := &keysRegisterOptions{f: f}
	cmd := &cobra.Command{
		Use:   "register KEY_FILE",
		Short: "Register an existing signing key's public half in this database",
		Long: `Register the public half of an existing signing key in this database's signing_keys, so that
runs signed with it verify here too: a key 'keys generate' made for one database, now used by
rounds against another (a second region, staging, a restored copy). KEY_FILE is the private
key file rounds sign with (--signing-key, PROBECTL_SIGNING_KEY): a PEM "PRIVATE KEY" (PKCS#8
ed25519) only its owner can read. Only the public half is stored; the private key never leaves
the file and is never printed.

Registering a key that is registered already changes nothing and says so; a retired key stays
retired.`,
		Example: `  probectl keys register /etc/probectl/probe.key
  PROBECTL_DATABASE_URL=postgres://probectl@db2.internal/probectl probectl keys register probe.key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			return runKeysRegister(cmd.Context(), opts)
		},
	}
	return cmd
}

// keyRegisteredJSON is the documented JSON shape of 'keys register -o json'.
type keyRegisteredJSON struct {
	KeyID             string     `json:"key_id"`
	Algorithm         string     `json:"algorithm"`
	PublicKey         string     `json:"public_key"` // base64 of the raw 32 bytes
	AlreadyRegistered bool       `json:"already_registered"`
	RetiredAt         *time.Time `json:"retired_at"`
}

func runKeysRegister(ctx context.Context, opts *keysRegisterOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	// The key file first: a missing or bad one is bad input, said without a database.
	signer, err := attest.LoadSigner(opts.File)
	var fileErr *attest.KeyFileError
	if errors.As(err, &fileErr) {
		return exit.UsageError(fmt.Errorf("KEY_FILE: %w", err))
	}
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	reg, err := keys.Register(ctx, pool, signer)
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: keyRegisteredJSON{KeyID: reg.KeyID, Algorithm: "ed25519", PublicKey: base64.StdEncoding.EncodeToString(reg.PublicKey),
			AlreadyRegistered: reg.Already, RetiredAt: reg.RetiredAt},
		Text: func() error { return writeKeyRegistered(f.IO, reg) },
	})
}

// writeKeyRegistered says what a registration did, and warns on stderr of a retired key.
func writeKeyRegistered(io *render.Streams, reg keys.Registered) error {
	var err error
	if reg.Already {
		_, err = fmt.Fprintf(io.Out, "signing key %s is registered already; nothing changed\n", reg.KeyID)
	} else {
		_, err = fmt.Fprintf(io.Out, "registered signing key %s: runs it signs verify in this database\n", reg.KeyID)
	}
	if reg.RetiredAt != nil {
		fmt.Fprintf(io.ErrOut, "warning: it was retired at %s: rounds refuse to sign with it; 'probectl keys generate' makes a new one\n",
			reg.RetiredAt.Format(time.RFC3339))
	}
	return err
}
