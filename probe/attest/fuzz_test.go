package attest

import (
	"errors"
	"testing"
)

// FuzzVerify feeds Verify arbitrary bytes (seeded with a valid envelope and the corpus under
// testdata/fuzz/FuzzVerify): it must never panic, every failure must be one of the three
// documented kinds, and a success must be a complete statement.
func FuzzVerify(f *testing.F) {
	signer := NewSigner(fixedKey(1))
	keys := keysOf(signer)
	good, err := signer.Sign(sampleRun())
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(good))
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[{"keyid":"","sig":""}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := Verify(data, keys)
		if err != nil {
			if st != nil {
				t.Fatalf("error %v with a statement", err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrBadSignature) {
				t.Fatalf("undocumented error kind: %v", err)
			}
			return
		}
		if st == nil || st.Type != StatementType || st.PredicateType != PredicateType || len(st.Subject) == 0 {
			t.Fatalf("accepted an incomplete statement: %+v", st)
		}
	})
}
