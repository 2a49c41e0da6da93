-- name: RegisterSigningKey
-- Registering the same key twice is a no-op (keys generate may be retried); a key id that is
-- already taken by another public key is reported by the wrapper, never overwritten.
INSERT INTO signing_keys (key_id, public_key, created_at)
VALUES ($1, $2, now())
ON CONFLICT (key_id) DO NOTHING;

-- name: SigningKeyPublic
SELECT public_key FROM signing_keys WHERE key_id = $1;

-- name: VerificationKeys
-- The keys runs are verified against: every key, with when it was retired; a retired key still
-- verifies the runs that finished before it was retired.
SELECT key_id, public_key, retired_at FROM signing_keys ORDER BY key_id;

-- name: ListSigningKeys
SELECT key_id, algorithm, created_at, retired_at FROM signing_keys ORDER BY created_at, key_id;

-- name: RetireSigningKey
-- Retires key $1 from $2 on (now() when NULL). A retirement only ever moves earlier: a key retired
-- already is moved to $2 when $2 is earlier (a leak found after a rotation), and is otherwise left
-- as it is. Returns the key's retirement time after the call and before it, and how many other
-- keys rounds may still sign with; no row: no such key.
WITH old AS (
    SELECT key_id, retired_at FROM signing_keys WHERE key_id = $1 FOR UPDATE
), moved AS (
    UPDATE signing_keys AS k
       SET retired_at = coalesce($2::timestamptz, now())
      FROM old
     WHERE k.key_id = old.key_id
       AND (old.retired_at IS NULL OR coalesce($2::timestamptz, now()) < old.retired_at)
    RETURNING k.retired_at
)
SELECT coalesce((SELECT retired_at FROM moved), old.retired_at), old.retired_at,
       (SELECT count(*) FROM signing_keys WHERE retired_at IS NULL AND key_id <> $1)
  FROM old;
