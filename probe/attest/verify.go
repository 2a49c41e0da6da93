package attest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// Verification failures, told apart so that `deploy verify` can count them separately.
var (
	// ErrMalformed: not a DSSE envelope of an in-toto probe-run statement.
	ErrMalformed = errors.New("malformed envelope")
	// ErrUnknownKey: no signature names a key registered in signing_keys (or none at all).
	ErrUnknownKey = errors.New("no signature from a known key")
	// ErrBadSignature: a signature names a known key but does not verify: the payload or the
	// signature was changed after signing.
	ErrBadSignature = errors.New("bad signature")
)

// Verify checks that the envelope carries a valid signature from one of keys (key id → public
// key) and returns the statement it signs. Errors wrap ErrMalformed, ErrUnknownKey or
// ErrBadSignature. It does not check which server the statement is about: see CheckSubject.
func Verify(envelope json.RawMessage, keys map[string]ed25519.PublicKey) (*Statement, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("%w: payload type %q, want %q", ErrMalformed, env.PayloadType, PayloadType)
	}
	if _, err := decodeB64(env.Payload); err != nil {
		return nil, fmt.Errorf("%w: payload is not base64", ErrMalformed)
	}
	var verifiers []dsse.Verifier
	for _, s := range env.Signatures {
		pub, known := keys[s.KeyID]
		if !known || slices.ContainsFunc(verifiers, func(v dsse.Verifier) bool { id, _ := v.KeyID(); return id == s.KeyID }) {
			continue
		}
		if _, err := decodeB64(s.Sig); err != nil {
			return nil, fmt.Errorf("%w: signature for key %s is not base64", ErrMalformed, s.KeyID)
		}
		verifiers = append(verifiers, &keySV{id: s.KeyID, pub: pub})
	}
	if len(verifiers) == 0 {
		return nil, fmt.Errorf("%w: %d signature(s), none from the %d registered key(s)",
			ErrUnknownKey, len(env.Signatures), len(keys))
	}
	// Only signatures naming a known key are offered to the verifier: one with an empty key id
	// would otherwise be tried against every key.
	env.Signatures = slices.DeleteFunc(env.Signatures, func(s dsse.Signature) bool {
		_, known := keys[s.KeyID]
		return !known
	})
	ev, err := dsse.NewEnvelopeVerifier(verifiers...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	_, body, err := ev.VerifyAndDecode(context.Background(), &env)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	st, err := decodeStatement(body)
	if err != nil {
		return nil, err
	}
	return st, nil
}

// decodeStatement parses a signed payload. Unknown fields are allowed: a run signed by a newer
// release (fields added to check.Result) must still verify after a rollback to this one.
func decodeStatement(body []byte) (*Statement, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var st Statement
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: statement: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: statement: trailing data", ErrMalformed)
	}
	if st.Type != StatementType {
		return nil, fmt.Errorf("%w: statement type %q, want %q", ErrMalformed, st.Type, StatementType)
	}
	if st.PredicateType != PredicateType {
		return nil, fmt.Errorf("%w: predicate type %q, want %q", ErrMalformed, st.PredicateType, PredicateType)
	}
	if len(st.Subject) == 0 {
		return nil, fmt.Errorf("%w: statement has no subject", ErrMalformed)
	}
	return &st, nil
}

// decodeB64 accepts what DSSE allows: standard or URL-safe base64.
func decodeB64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}
