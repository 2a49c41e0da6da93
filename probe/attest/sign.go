package attest

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Signer signs runs with one ed25519 key. It is safe for concurrent use.
type Signer struct {
	sv  *keySV
	env *dsse.EnvelopeSigner
}

// NewSigner wraps a private key. It does not copy it; callers keep it secret.
func NewSigner(priv ed25519.PrivateKey) *Signer {
	pub := priv.Public().(ed25519.PublicKey)
	sv := &keySV{id: KeyID(pub), pub: pub, priv: priv}
	env, err := dsse.NewEnvelopeSigner(sv)
	if err != nil { // only with no signers, and we pass one
		panic(err)
	}
	return &Signer{sv: sv, env: env}
}

// KeyID is the id under which the public key is registered and which envelopes carry.
func (s *Signer) KeyID() string { return s.sv.id }

// PublicKey is the key to register in signing_keys so that runs can be verified.
func (s *Signer) PublicKey() ed25519.PublicKey { return s.sv.pub }

// String never shows key material, so a Signer printed by accident in a log leaks nothing.
func (s *Signer) String() string { return "attest.Signer(" + s.sv.id + ")" }

// Sign returns the DSSE envelope (JSON) of the run's in-toto statement.
func (s *Signer) Sign(r Run) (json.RawMessage, error) {
	payload, err := json.Marshal(newStatement(r))
	if err != nil {
		return nil, fmt.Errorf("sign run of job %d: encode statement: %w", r.JobID, err)
	}
	env, err := s.env.SignPayload(context.Background(), PayloadType, payload)
	if err != nil {
		return nil, fmt.Errorf("sign run of job %d: %w", r.JobID, err)
	}
	out, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("sign run of job %d: encode envelope: %w", r.JobID, err)
	}
	return out, nil
}

// keySV is the dsse.SignerVerifier for one ed25519 key; priv is nil for a verify-only key.
type keySV struct {
	id   string
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

var errBadSig = errors.New("ed25519 signature does not verify")

func (k *keySV) Sign(_ context.Context, data []byte) ([]byte, error) {
	if k.priv == nil {
		return nil, errors.New("verify-only key cannot sign")
	}
	return ed25519.Sign(k.priv, data), nil
}

func (k *keySV) Verify(_ context.Context, data, sig []byte) error {
	if len(k.pub) != ed25519.PublicKeySize || !ed25519.Verify(k.pub, data, sig) {
		return errBadSig
	}
	return nil
}

func (k *keySV) KeyID() (string, error) { return k.id, nil }

func (k *keySV) Public() crypto.PublicKey { return k.pub }
