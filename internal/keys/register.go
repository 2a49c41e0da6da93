package keys

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// Registered is a key Register put in signing_keys, or found there already.
type Registered struct {
	KeyID     string
	PublicKey ed25519.PublicKey
	// Already: the key was registered before; nothing was written.
	Already bool
	// RetiredAt is set when the key was registered before and retired: registering it again does
	// not undo a retirement, and rounds refuse to sign with it.
	RetiredAt *time.Time
}

// Register registers the public half of signer's key (read from the private key file a round
// signs with, as 'keys generate' wrote it: the caller reads and judges the file with
// attest.LoadSigner before it connects) in the database: a key made for one database then signs
// runs that verify in another too. Only the public half is stored. Registering a key again
// changes nothing and says so.
func Register(ctx context.Context, pool *pgxpool.Pool, signer *attest.Signer) (Registered, error) {
	reg := Registered{KeyID: signer.KeyID(), PublicKey: signer.PublicKey()}
	known, err := queries.VerificationKeys(ctx, pool)
	if err != nil {
		return reg, fmt.Errorf("read signing keys: %w", err)
	}
	if k, ok := known[reg.KeyID]; ok && bytes.Equal(k.Public, reg.PublicKey) {
		reg.Already, reg.RetiredAt = true, k.RetiredAt
		return reg, nil
	}
	return reg, queries.RegisterSigningKey(ctx, pool, reg.KeyID, reg.PublicKey)
}
