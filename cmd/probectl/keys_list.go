package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/internal/render"
)

type keysListOptions struct {
	f *factory
}

func newKeysListCmd(f *factory) *cobra.Command {
	opts := &keysListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the registered signing keys",
		Long: `List every key in signing_keys, oldest first, with when it was registered and, for a retired
key, when it was retired. A run verifies against a key that was not yet retired when the run
finished; rounds sign only with keys that are not retired.`,
		Example: `  probectl keys list
  probectl keys list -o json | jq -r '.[] | select(.retired_at == null) | .key_id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKeysList(cmd.Context(), opts)
		},
	}
	return cmd
}

func runKeysList(ctx context.Context, opts *keysListOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	registered, err := keys.List(ctx, pool)
	if err != nil {
		return err
	}
	out := make([]keyJSON, 0, len(registered))
	for _, k := range registered {
		out = append(out, toKeyJSON(k))
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		tbl := render.NewTable(f.IO.Out, "KEY ID", "ALGORITHM", "CREATED", "RETIRED")
		for _, k := range registered {
			retired := "-"
			if k.RetiredAt != nil {
				retired = f.IO.Time(*k.RetiredAt)
			}
			tbl.Row(k.KeyID, k.Algorithm, f.IO.Time(k.CreatedAt), retired)
		}
		return tbl.Render()
	}})
}
