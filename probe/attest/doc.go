// Package attest signs each run as a DSSE envelope (ed25519) around an in-toto Statement v1 whose
// subject is the server that was checked, and verifies such envelopes against the public keys
// registered in signing_keys. A signed run lets anyone holding the public key check, long after the
// round, that an observation stored in probe_runs is the one the prober made.
//
// The statement:
//
//	{
//	  "_type": "https://in-toto.io/Statement/v1",
//	  "subject": [{"name": "<server slug>", "digest": {"sha256": "<hex sha256 of the endpoint URL>"}}],
//	  "predicateType": "https://probectl.dev/probe-run/v1",
//	  "predicate": {"job_id": 1, "round_id": 1, "invocation": 0,
//	                "server": {"id": 1, "slug": "...", "url": "...", "kind": "mcp"},
//	                "result": { ...check.Result... }}
//	}
//
// wrapped in {"payloadType": "application/vnd.in-toto+json", "payload": "<base64>",
// "signatures": [{"keyid": "ed25519:<16 hex>", "sig": "<base64>"}]}.
//
// Key ids are "ed25519:" followed by the first 16 hex digits of the SHA-256 of the raw 32-byte
// public key: short enough to read in a table, stable, and derived only from public material.
package attest
