package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/queries"
)

type keysExportOptions struct {
	f     *factory
	KeyID string
}

func newKeysExportCmd(f *factory) *cobra.Command {
	opts := &keysExportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "export KEY_ID",
		Short: "Print a registered public key as a PKIX PEM block",
		Long: `Print the public half of a registered key as a PKIX "BEGIN PUBLIC KEY" PEM block, the form
OpenSSL and most libraries read. Hand it with an exported run ('runs show ID --envelope') to a
third party: 'probectl runs verify FILE --public-key FILE' checks the run with nothing else.
Retired keys export too, with a line "Retired-At: <RFC 3339 time>" before the PEM block (text
before a PEM block, which OpenSSL and PEM readers skip): 'runs verify' applies it, so the runs a
retired key signed before its retirement still verify and the ones signed from then on do not.`,
		Example: `  probectl keys export ed25519:3f9a0c1d2b4e5f60 > probectl.pub
  openssl pkey -pubin -in probectl.pub -noout -text`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.KeyID = args[0]
			return runKeysExport(cmd.Context(), opts)
		},
	}
	return cmd
}

func runKeysExport(ctx context.Context, opts *keysExportOptions) error {
	f := opts.f
	if _, err := f.OutputFormat("table"); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	data, err := history.ExportKey(ctx, pool, opts.KeyID)
	if errors.Is(err, queries.ErrNoSuchKey) {
		return exit.UsageError(fmt.Errorf("no signing key %q is registered; 'probectl keys list' shows the keys", opts.KeyID))
	}
	if err != nil {
		return err
	}
	_, err = f.IO.Out.Write(data)
	return err
}
