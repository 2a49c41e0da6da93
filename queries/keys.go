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
	var stored []byte
	if err := db.QueryRow(ctx, SQL("SigningKeyPublic"), keyID).Scan(&stored); err != nil {
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

// VerificationKeys returns every registered key, retired ones included, by key id.
func VerificationKeys(ctx context.Context, db DBTX) (map[string]VerificationKey, error) {
	rows, err := db.Query(ctx, SQL("VerificationKeys"))
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	out := map[string]VerificationKey{}
	var id string
	var pub []byte
	var retired *time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &pub, &retired}, func() error {
		out[id] = VerificationKey{Public: ed25519.PublicKey(bytes.Clone(pub)), RetiredAt: retired}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read signing keys: %w", err)
	}
	return out, nil
}

// SigningKey is one row of signing_keys, without the key itself (public, but noise in a listing).
type SigningKey struct {
	KeyID     string
	Algorithm string
	CreatedAt time.Time
	RetiredAt *time.Time
}

// ListSigningKeys returns every key, retired ones included, oldest first.
func ListSigningKeys(ctx context.Context, db DBTX) ([]SigningKey, error) {
	rows, err := db.Query(ctx, SQL("ListSigningKeys"))
	if err != nil {
		return nil, fmt.Errorf("list signing keys: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SigningKey, error) {
		var k SigningKey
		err := row.Scan(&k.KeyID, &k.Algorithm, &k.CreatedAt, &k.RetiredAt)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("list signing keys: %w", err)
	}
	return out, nil
}

// ErrFutureRetirement says a key was to be retired from a moment still to come: rounds would
// refuse it at once while its runs went on verifying until then.
var ErrFutureRetirement = errors.New("a key is retired from now or from a moment past, not from the future")

// KeyRetirement is what RetireSigningKey did.
type KeyRetirement struct {
	// RetiredAt is the key's retirement time after the call.
	RetiredAt time.Time
	// Before is its retirement time before the call; nil: it was not retired.
	Before *time.Time
	// KeysLeft counts the other keys rounds may still sign with.
	KeysLeft int
}

// Changed says whether the call retired the key or moved its retirement earlier.
func (r KeyRetirement) Changed() bool { return r.Before == nil || !r.Before.Equal(r.RetiredAt) }

// RetireSigningKey retires a key from at on (the database's now() when nil): rounds may no
// longer sign with it, and deploy verify refuses the runs it signed that finished from then on,
// while the runs it signed before keep verifying. A retirement only ever moves earlier: a key
// retired already is moved to an earlier at (a leak found after a rotation) and otherwise left as
// it is. ErrNoSuchKey: no key has that id; ErrFutureRetirement: at is after this host's clock.
func RetireSigningKey(ctx context.Context, db DBTX, keyID string, at *time.Time) (KeyRetirement, error) {
	var r KeyRetirement
	if at != nil && at.After(time.Now()) {
		return r, fmt.Errorf("retire signing key %s: %w", keyID, ErrFutureRetirement)
	}
	err := db.QueryRow(ctx, SQL("RetireSigningKey"), keyID, at).Scan(&r.RetiredAt, &r.Before, &r.KeysLeft)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("retire signing key %s: %w", keyID, ErrNoSuchKey)
	}
	if err != nil {
		return r, fmt.Errorf("retire signing key %s: %w", keyID, err)
	}
	return r, nil
}

// keyBeginner starts a transaction: a pool or a connection.
type keyBeginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// PreviewRetireSigningKey says what RetireSigningKey would do, by doing it in a transaction that
// it rolls back: the preview and the change cannot disagree.
func PreviewRetireSigningKey(ctx context.Context, db keyBeginner, keyID string, at *time.Time) (KeyRetirement, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return KeyRetirement{}, fmt.Errorf("retire signing key %s: %w", keyID, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return RetireSigningKey(ctx, tx, keyID, at)
}
