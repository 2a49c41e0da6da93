package queries

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrKeyIDTaken says a key id is registered with another public key: two keys whose ids collide
// must not be confused, so the second is refused.
var ErrKeyIDTaken = errors.New("key id is registered with another public key")

// ErrNoSuchKey says no key is registered under a key id.
var ErrNoSuchKey = errors.New("no key registered under that id")

// RegisterSigningKey records a public key that verifies runs. Registering the same key again does
// nothing; a different key under the same id is ErrKeyIDTaken.
func RegisterSigningKey(ctx context.Context, db DBTX, keyID string, pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("register signing key %s: public key is %d bytes, want %d", keyID, len(pub), ed25519.PublicKeySize)
	}
	if _, err := db.Exec(ctx, SQL("RegisterSigningKey"), keyID, []byte(pub)); err != nil {
		return fmt.Errorf("register signing key %s: %w", keyID, err)
	}
	stored, err := valueOf[[]byte](ctx, db, "SigningKeyPublic", keyID)
	if err != nil {
		return fmt.Errorf("register signing key %s: read back: %w", keyID, err)
	}
	if !bytes.Equal(stored, pub) {
		return fmt.Errorf("register signing key %s: %w", keyID, ErrKeyIDTaken)
	}
	return nil
}

// VerificationKey is a registered public key and when it was retired (nil: it was not).
type VerificationKey struct {
	Public    ed25519.PublicKey
	RetiredAt *time.Time
}

// keyRow is one row of VerificationKeys.
type keyRow struct {
	KeyID     string     `db:"key_id"`
	Public    []byte     `db:"public_key"`
	RetiredAt *time.Time `db:"retired_at"`
}

// VerificationKeys returns every registered key, retired ones included, by key id.
func VerificationKeys(ctx context.Context, db DBTX) (map[string]VerificationKey, error) {
	rows, err := rowsOf[keyRow](ctx, db, "VerificationKeys")
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	out := make(map[string]VerificationKey, len(rows))
	for _, k := range rows {
		out[k.KeyID] = VerificationKey{Public: ed25519.PublicKey(k.Public), RetiredAt: k.RetiredAt}
	}
	return out, nil
}

// SigningKey is one row of signing_keys, without the key itself (public, but noise in a listing).
type SigningKey struct {
	KeyID     string     `db:"key_id"`
	Algorithm string     `db:"algorithm"`
	CreatedAt time.Time  `db:"created_at"`
	RetiredAt *time.Time `db:"retired_at"`
}

// ListSigningKeys returns every key, retired ones included, oldest first.
func ListSigningKeys(ctx context.Context, db DBTX) ([]SigningKey, error) {
	out, err := rowsOf[SigningKey](ctx, db, "ListSigningKeys")
	if err != nil {
		return nil, fmt.Errorf("list signing keys: %w", err)
	}
	return out, nil
}

// KeyRetirement is what RetireSigningKey did.
type KeyRetirement struct {
	// RetiredAt is the key's retirement time after the call.
	RetiredAt time.Time `db:"retired_at"`
	// Before is its retirement time before the call; nil: it was not retired.
	Before *time.Time `db:"before"`
	// KeysLeft counts the other keys rounds may still sign with.
	KeysLeft int `db:"keys_left"`
}

// Changed says whether the call retired the key or moved its retirement earlier.
func (r KeyRetirement) Changed() bool { return r.Before == nil || !r.Before.Equal(r.RetiredAt) }

// RetireSigningKey retires a key from at on (the database's now() when nil): rounds may no
// longer sign with it, and deploy verify refuses the runs it signed that finished from then on,
// while the runs it signed before keep verifying. A retirement only ever moves earlier: a key
// retired already is moved to an earlier at (a leak found after a rotation) and otherwise left as
// it is. ErrNoSuchKey: no key has that id. Whether at may be in the future is not judged here:
// internal/keys' Retirement.Validate states that rule, once, by the clock the caller read at with.
func RetireSigningKey(ctx context.Context, db DBTX, keyID string, at *time.Time) (KeyRetirement, error) {
	r, err := rowOf[KeyRetirement](ctx, db, "RetireSigningKey", keyID, at)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("retire signing key %s: %w", keyID, ErrNoSuchKey)
	}
	if err != nil {
		return r, fmt.Errorf("retire signing key %s: %w", keyID, err)
	}
	return r, nil
}

// PreviewRetireSigningKey says what RetireSigningKey would do, by doing it in a transaction that
// it rolls back: the preview and the change cannot disagree.
func PreviewRetireSigningKey(ctx context.Context, db DB, keyID string, at *time.Time) (KeyRetirement, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return KeyRetirement{}, fmt.Errorf("retire signing key %s: %w", keyID, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return RetireSigningKey(ctx, tx, keyID, at)
}
