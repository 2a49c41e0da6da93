// Package keys keeps the registry of the ed25519 keys that sign runs (signing_keys): it makes a
// key and registers its public half, lists the keys, and retires one. The rules of a retirement
// live here, not in the command that asks for one: a retirement is from now or from a moment past
// (runs are judged by when they finished, so a future one would let a leaked key sign until then),
// and it only ever moves earlier (queries' RetireSigningKey decides that, in one statement).
package keys

import (
	"context"
	"crypto/ed25519"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// Generate makes a key: the private half goes to a new file at path (0600, never over an existing
// file), the public half is registered. A file that cannot be written is an *attest.KeyFileError
// (the caller's input); a registration that fails removes the file and exits 3.
func Generate(ctx context.Context, pool *pgxpool.Pool, path string) (attest.NewKey, error) {
	key, err := attest.CreateKey(ctx, path, func(ctx context.Context, id string, pub ed25519.PublicKey) error {
		return queries.RegisterSigningKey(ctx, pool, id, pub)
	})
	var fileErr *attest.KeyFileError
	if err != nil && !errors.As(err, &fileErr) {
		return key, exit.UnavailableError(err)
	}
	return key, err
}

// List returns every registered key, oldest first, retired ones included.
func List(ctx context.Context, pool *pgxpool.Pool) ([]queries.SigningKey, error) {
	return queries.ListSigningKeys(ctx, pool)
}

// Retirement asks to retire a key.
type Retirement struct {
	KeyID string
	// At is the moment the key is retired from; nil: the database's now.
	At *time.Time
	// Now is the clock At is judged by: the one a relative time ("6h" back) was read with.
	Now time.Time
}

// InputAt is the moment a retirement is asked from (Retirement.At; see internal/input).
const InputAt input.Name = "at"

// FutureError says a retirement was asked from a moment still to come: rounds could go on signing
// with a key its owner wants gone. It is bad input (exit 2); nothing is written.
type FutureError struct{ At time.Time }

func (e *FutureError) Error() string { return e.Unwrap().Error() }

// Unwrap is the error's text with InputAt kept apart, for a caller to say its own way.
func (e *FutureError) Unwrap() error {
	return input.Errorf("%s: %s is in the future; a key is retired from now or from a time past",
		InputAt, e.At.UTC().Format(time.RFC3339Nano))
}

// ExitCode: a retirement from the future is bad input.
func (e *FutureError) ExitCode() int { return exit.Usage }

// Validate refuses a retirement from the future (a *FutureError). It needs no database, so a
// command can call it before it connects; Preview and Retire call it too.
func (r Retirement) Validate() error {
	if r.At != nil && r.At.After(r.Now) {
		return &FutureError{At: *r.At}
	}
	return nil
}

// Preview says what Retire would do, and changes nothing.
func Preview(ctx context.Context, pool *pgxpool.Pool, r Retirement) (queries.KeyRetirement, error) {
	if err := r.Validate(); err != nil {
		return queries.KeyRetirement{}, err
	}
	return queries.PreviewRetireSigningKey(ctx, pool, r.KeyID, r.At)
}

// Retire retires the key from r.At on (see queries.RetireSigningKey): rounds may no longer sign
// with it, and the runs it signed that finished from then on fail verification. A key retired
// already moves only to an earlier moment. An unknown key is queries.ErrNoSuchKey.
func Retire(ctx context.Context, pool *pgxpool.Pool, r Retirement) (queries.KeyRetirement, error) {
	if err := r.Validate(); err != nil {
		return queries.KeyRetirement{}, err
	}
	return queries.RetireSigningKey(ctx, pool, r.KeyID, r.At)
}

// Verification returns every registered key, retired ones included, by key id, as attest.VerifyRun
// judges stored runs against them.
func Verification(ctx context.Context, db queries.DBTX) (map[string]attest.RegisteredKey, error) {
	rows, err := queries.VerificationKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make(map[string]attest.RegisteredKey, len(rows))
	for id, k := range rows {
		out[id] = attest.RegisteredKey{Public: k.Public, RetiredAt: k.RetiredAt}
	}
	return out, nil
}
