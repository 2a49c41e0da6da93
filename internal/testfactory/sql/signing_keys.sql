-- The keys a round may sign with: every key not retired.
SELECT key_id, public_key FROM signing_keys WHERE retired_at IS NULL ORDER BY key_id;
