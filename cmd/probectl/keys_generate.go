package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/probe/attest"
)

type keysGenerateOptions struct {
	f   *factory
	Out string
}

func newKeysGenerateCmd(f *factory) *cobra.Command {
	opts := &keysGenerateOptions{f: f}
	cmd := &cobra.Command{
		Use:   "generate --out FILE",
		Short: "Make a signing key and register its public half",
		Long: `Make a new ed25519 signing key. The private key is written to --out as a PEM "PRIVATE KEY"
(PKCS#8) file with mode 0600; an existing file is never overwritten. The public key is
registered in signing_keys, so runs signed with it verify. The key id is printed; the private
key never is.

If the registration fails the new file is removed, so the command can simply be run again.`,
		Example: `  probectl keys generate --out probe.key
  probectl keys generate --out /etc/probectl/probe.key -o json | jq -r .key_id
  PROBECTL_SIGNING_KEY=probe.key probectl run round`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeysGenerate(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "file to write the private key to (must not exist)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// keyGeneratedJSON is the documented JSON shape of 'keys generate -o json'.
type keyGeneratedJSON struct {
	KeyID          string `json:"key_id"`
	Algorithm      string `json:"algorithm"`
	PublicKey      string `json:"public_key"` // base64 of the raw 32 bytes
	PrivateKeyFile string `json:"private_key_file"`
}

func runKeysGenerate(ctx context.Context, opts *keysGenerateOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Out == "" {
		return exit.UsageError(errors.New("--out: a file name is required"))
	}
	// Connect first: no key file is written while the database is out of reach.
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	key, err := keys.Generate(ctx, pool, opts.Out)
	var fileErr *attest.KeyFileError
	if errors.As(err, &fileErr) {
		return exit.UsageError(fmt.Errorf("--out: %w", err))
	}
	if err != nil {
		return err
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: keyGeneratedJSON{KeyID: key.KeyID, Algorithm: "ed25519",
			PublicKey: base64.StdEncoding.EncodeToString(key.PublicKey), PrivateKeyFile: key.Path},
		Text: func() error {
			_, err := fmt.Fprintf(f.IO.Out, "generated signing key %s\nprivate key written to %s (mode 0600); public key registered\n",
				key.KeyID, key.Path)
			return err
		},
	})
}
