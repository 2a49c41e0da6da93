package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/queries"
)

func newKeysCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys <command>",
		Short: "Manage the ed25519 keys that sign runs",
		Long: `Every run a round records is signed: a DSSE envelope (ed25519) around an in-toto Statement
whose subject is the server checked. 'keys generate' makes a key: the private half goes to a
file only its owner can read, the public half is registered in signing_keys, where
'deploy verify' finds it. 'keys register' registers an existing key's public half in another
database, for rounds that sign with the same key there. 'keys list' shows the registered keys. 'keys retire' ends a key's
use: nothing it signs from then on verifies, what it signed before still does.

Key ids read "ed25519:" and the first 16 hex digits of the SHA-256 of the public key.
'run round' takes the private key with --signing-key FILE or PROBECTL_SIGNING_KEY.`,
		Example: `  probectl keys generate --out /etc/probectl/probe.key
  probectl run round --signing-key /etc/probectl/probe.key
  probectl keys list
  probectl keys retire ed25519:3f9a0c1d2b4e5f60`,
	}
	cmd.AddCommand(
		newKeysGenerateCmd(f),
		newKeysRegisterCmd(f),
		newKeysListCmd(f),
		newKeysRetireCmd(f),
		newKeysExportCmd(f),
	)
	return cmd
}

// keyJSON is the documented JSON shape of a registered key in 'keys list'.
type keyJSON struct {
	KeyID     string     `json:"key_id"`
	Algorithm string     `json:"algorithm"`
	CreatedAt time.Time  `json:"created_at"`
	RetiredAt *time.Time `json:"retired_at"`
}

func toKeyJSON(k queries.SigningKey) keyJSON {
	return keyJSON{KeyID: k.KeyID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt}
}
