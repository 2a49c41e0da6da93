package attest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
)

// NewKey is a key CreateKey made: its id and public half (the private half stays in the file).
type NewKey struct {
	KeyID     string
	PublicKey ed25519.PublicKey
	Path      string
}

// CreateKey makes a signing key: it writes the private key to a new file at path (0600, never
// over an existing file), then registers the public key through register (signing_keys). If the
// registration fails the file is removed, so a retry with the same path works and no key exists
// that nothing can verify.
func CreateKey(ctx context.Context, path string, register func(ctx context.Context, keyID string, pub ed25519.PublicKey) error) (NewKey, error) {
	pub, priv, err := GenerateKey()
	if err != nil {
		return NewKey{}, err
	}
	if err := WritePrivateKey(path, priv); err != nil {
		return NewKey{}, err
	}
	id := KeyID(pub)
	if err := register(ctx, id, pub); err != nil {
		if rmErr := os.Remove(path); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			return NewKey{}, fmt.Errorf("register key %s: %w (and could not remove %s: %v)", id, err, path, rmErr)
		}
		return NewKey{}, fmt.Errorf("register key %s: %w; %s was removed", id, err, path)
	}
	return NewKey{KeyID: id, PublicKey: pub, Path: path}, nil
}
