package attest

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/check"
)

// fixedKey is a deterministic key so that fuzz seeds stay valid across runs.
func fixedKey(seedByte byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = seedByte
	}
	return ed25519.NewKeyFromSeed(seed)
}

func sampleRun() Run {
	tools := 3
	start := time.Date(2026, 10, 7, 22, 13, 24, 0, time.UTC)
	return Run{
		JobID: 42, ServerID: 7, Slug: "weather", URL: "https://weather.example/mcp", Kind: "mcp",
		RoundID: 9, Invocation: 3,
		Result: check.Result{
			Outcome: check.OutcomeOK, Summary: "3 tools", Tools: &tools, ServerName: "weather",
			Requests: []check.Request{{Method: "POST", URL: "https://weather.example/mcp", RPC: "initialize",
				Status: 200, LatencySeconds: 0.1, Bytes: 120, StartedAt: start}},
			StartedAt: start, FinishedAt: start.Add(time.Second),
		},
	}
}

func keysOf(signers ...*Signer) map[string]ed25519.PublicKey {
	out := map[string]ed25519.PublicKey{}
	for _, s := range signers {
		out[s.KeyID()] = s.PublicKey()
	}
	return out
}

func TestSignThenVerifyGivesBackTheRun(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	require.NoError(t, err)

	st, err := Verify(env, keysOf(s))
	require.NoError(t, err)
	assert.Equal(t, StatementType, st.Type)
	assert.Equal(t, PredicateType, st.PredicateType)
	require.Len(t, st.Subject, 1)
	assert.Equal(t, "weather", st.Subject[0].Name)
	assert.Equal(t, URLDigest("https://weather.example/mcp"), st.Subject[0].Digest["sha256"])
	assert.Equal(t, int64(42), st.Predicate.JobID)
	assert.Equal(t, int64(9), st.Predicate.RoundID)
	assert.Equal(t, 3, st.Predicate.Invocation)
	assert.Equal(t, Server{ID: 7, Slug: "weather", URL: "https://weather.example/mcp", Kind: "mcp"}, st.Predicate.Server)
	assert.Equal(t, sampleRun().Result, st.Predicate.Result)
	assert.NoError(t, st.CheckSubject("weather", "https://weather.example/mcp"))
	assert.NoError(t, st.CheckJob(42))
}

func TestEnvelopeHasTheDocumentedShape(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	require.NoError(t, err)
	var raw struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
		Signatures  []struct {
			KeyID string `json:"keyid"`
			Sig   string `json:"sig"`
		} `json:"signatures"`
	}
	require.NoError(t, json.Unmarshal(env, &raw))
	assert.Equal(t, "application/vnd.in-toto+json", raw.PayloadType)
	require.Len(t, raw.Signatures, 1)
	assert.Equal(t, s.KeyID(), raw.Signatures[0].KeyID)
	payload, err := base64.StdEncoding.DecodeString(raw.Payload)
	require.NoError(t, err)
	var st map[string]any
	require.NoError(t, json.Unmarshal(payload, &st))
	assert.Equal(t, "https://in-toto.io/Statement/v1", st["_type"])
	assert.Equal(t, "https://probectl.dev/probe-run/v1", st["predicateType"])
	pred := st["predicate"].(map[string]any)
	for _, k := range []string{"job_id", "round_id", "invocation", "server", "result"} {
		assert.Contains(t, pred, k)
	}
}

func TestKeyIDIsEd25519AndSixteenHexDigits(t *testing.T) {
	t.Parallel()
	id := NewSigner(fixedKey(1)).KeyID()
	assert.Regexp(t, `^ed25519:[0-9a-f]{16}$`, id)
	assert.NotEqual(t, id, NewSigner(fixedKey(2)).KeyID())
}

func TestSignerNeverPrintsKeyMaterial(t *testing.T) {
	t.Parallel()
	priv := fixedKey(1)
	s := NewSigner(priv)
	str := s.String()
	assert.Equal(t, "attest.Signer("+s.KeyID()+")", str)
	assert.NotContains(t, str, base64.StdEncoding.EncodeToString(priv.Seed()))
}

// reencode rebuilds an envelope after f changed it.
func reencode(t *testing.T, env json.RawMessage, f func(*dsse.Envelope)) json.RawMessage {
	t.Helper()
	var e dsse.Envelope
	require.NoError(t, json.Unmarshal(env, &e))
	f(&e)
	out, err := json.Marshal(e)
	require.NoError(t, err)
	return out
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	signer := NewSigner(fixedKey(1))
	stranger := NewSigner(fixedKey(2))
	good, err := signer.Sign(sampleRun())
	require.NoError(t, err)
	keys := keysOf(signer)

	// signRaw signs any payload with the known key, to reach the statement checks.
	signRaw := func(payloadType, payload string) json.RawMessage {
		es, err := dsse.NewEnvelopeSigner(signer.sv)
		require.NoError(t, err)
		e, err := es.SignPayload(context.Background(), payloadType, []byte(payload))
		require.NoError(t, err)
		out, err := json.Marshal(e)
		require.NoError(t, err)
		return out
	}
	strangers, err := stranger.Sign(sampleRun())
	require.NoError(t, err)

	cases := []struct {
		name string
		env  json.RawMessage
		want error
	}{
		{"a payload changed after signing fails as a bad signature", reencode(t, good, func(e *dsse.Envelope) {
			body, _ := base64.StdEncoding.DecodeString(e.Payload)
			body = []byte(strings.Replace(string(body), `"outcome":"ok"`, `"outcome":"failed"`, 1))
			e.Payload = base64.StdEncoding.EncodeToString(body)
		}), ErrBadSignature},
		{"a payload type changed after signing fails", reencode(t, good, func(e *dsse.Envelope) {
			e.PayloadType = "application/json"
		}), ErrMalformed},
		{"a flipped signature byte fails as a bad signature", reencode(t, good, func(e *dsse.Envelope) {
			sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
			sig[0] ^= 1
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(sig)
		}), ErrBadSignature},
		{"a signature by an unregistered key is not from a known key", strangers, ErrUnknownKey},
		{"a stranger's signature relabelled with our key id is a bad signature", reencode(t, strangers, func(e *dsse.Envelope) {
			e.Signatures[0].KeyID = signer.KeyID()
		}), ErrBadSignature},
		{"a signature without a key id is not from a known key", reencode(t, good, func(e *dsse.Envelope) {
			e.Signatures[0].KeyID = ""
		}), ErrUnknownKey},
		{"an envelope without signatures is not from a known key", reencode(t, good, func(e *dsse.Envelope) {
			e.Signatures = nil
		}), ErrUnknownKey},
		{"text that is not JSON is malformed", json.RawMessage(`not json`), ErrMalformed},
		{"a JSON array is malformed", json.RawMessage(`[]`), ErrMalformed},
		{"a payload that is not base64 is malformed", reencode(t, good, func(e *dsse.Envelope) {
			e.Payload = "!!!"
		}), ErrMalformed},
		{"a signature that is not base64 is malformed", reencode(t, good, func(e *dsse.Envelope) {
			e.Signatures[0].Sig = "!!!"
		}), ErrMalformed},
		{"a signed payload that is not a statement is malformed", signRaw(PayloadType, `{"hello":`), ErrMalformed},
		{"a signed statement of another type is malformed", signRaw(PayloadType,
			`{"_type":"https://in-toto.io/Statement/v0.1","subject":[{"name":"x","digest":{"sha256":"00"}}],"predicateType":"https://probectl.dev/probe-run/v1","predicate":{}}`), ErrMalformed},
		{"a signed statement with another predicate type is malformed", signRaw(PayloadType,
			`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"x","digest":{"sha256":"00"}}],"predicateType":"https://slsa.dev/provenance/v1","predicate":{}}`), ErrMalformed},
		{"a signed statement without a subject is malformed", signRaw(PayloadType,
			`{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":"https://probectl.dev/probe-run/v1","predicate":{}}`), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := Verify(tc.env, keys)
			require.ErrorIs(t, err, tc.want)
			assert.Nil(t, st)
		})
	}
}

func TestVerifyAcceptsAnyOneOfSeveralRegisteredKeys(t *testing.T) {
	t.Parallel()
	old, current := NewSigner(fixedKey(1)), NewSigner(fixedKey(2))
	env, err := old.Sign(sampleRun())
	require.NoError(t, err)
	_, err = Verify(env, keysOf(old, current))
	require.NoError(t, err)
}

func TestCheckSubjectCatchesARunStoredAgainstAnotherServer(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	require.NoError(t, err)
	st, err := Verify(env, keysOf(s))
	require.NoError(t, err)

	cases := []struct{ name, slug, url string }{
		{"another slug is the wrong subject", "news", "https://weather.example/mcp"},
		{"the same slug at another endpoint is the wrong subject", "weather", "https://weather.example/v2/mcp"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, st.CheckSubject(tc.slug, tc.url), ErrWrongSubject)
		})
	}
	assert.ErrorIs(t, st.CheckJob(43), ErrWrongSubject, "another job's row is the wrong subject")
}

func TestCheckSubjectWantsOneSubjectAndThePredicatesOwnServer(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	require.NoError(t, err)
	const slug, url = "weather", "https://weather.example/mcp"

	cases := []struct {
		name   string
		change func(st *Statement)
	}{
		{"a second subject makes it about more than the row's server", func(st *Statement) {
			st.Subject = append(st.Subject, Subject{Name: "news", Digest: map[string]string{"sha256": URLDigest("https://news.example/mcp")}})
		}},
		{"no subject makes it about no server", func(st *Statement) { st.Subject = nil }},
		{"a predicate naming another slug is about another server", func(st *Statement) { st.Predicate.Server.Slug = "news" }},
		{"a predicate naming another endpoint is about another server", func(st *Statement) {
			st.Predicate.Server.URL = "https://weather.example/v2/mcp"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := Verify(env, keysOf(s))
			require.NoError(t, err)
			require.NoError(t, st.CheckSubject(slug, url), "precondition: the statement as signed is about the row's server")
			tc.change(st)
			assert.ErrorIs(t, st.CheckSubject(slug, url), ErrWrongSubject)
		})
	}
}

func TestAKeyOfTheWrongLengthFailsAsABadSignatureNotAPanic(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	env, err := s.Sign(sampleRun())
	require.NoError(t, err)
	st, err := Verify(env, map[string]ed25519.PublicKey{s.KeyID(): {1, 2, 3}})
	require.ErrorIs(t, err, ErrBadSignature)
	assert.Nil(t, st)
}

func TestASignatureFromAnUnknownKeyBesidesAGoodOneIsIgnored(t *testing.T) {
	t.Parallel()
	s := NewSigner(fixedKey(1))
	good, err := s.Sign(sampleRun())
	require.NoError(t, err)
	env := reencode(t, good, func(e *dsse.Envelope) {
		e.Signatures = append(e.Signatures, dsse.Signature{KeyID: "x", Sig: "!!"})
	})
	st, err := Verify(env, keysOf(s))
	require.NoError(t, err)
	assert.Equal(t, int64(42), st.Predicate.JobID)
}
