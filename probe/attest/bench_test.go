package attest

import "testing"

// Signing and verifying happen once per run: these say what they add to a round and to
// deploy verify.
func BenchmarkSign(b *testing.B) {
	s := NewSigner(fixedKey(1))
	run := sampleRun()
	for b.Loop() {
		if _, err := s.Sign(run); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	if err != nil {
		b.Fatal(err)
	}
	keys := keysOf(s)
	for b.Loop() {
		if _, err := Verify(env, keys); err != nil {
			b.Fatal(err)
		}
	}
}
