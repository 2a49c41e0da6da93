-- +goose Up
-- A round's heartbeat: written by the round at least every 15 seconds while it runs, by the
-- database's clock, so that a round whose process died is seen as dead (heartbeat older than 60
-- seconds) instead of running forever. Additive: a binary from before this migration inserts its
-- rounds without a heartbeat (NULL) and keeps working; status judges such a round by its start
-- (queries/rounds.sql, RoundStates).
ALTER TABLE probe_rounds ADD COLUMN heartbeat_at timestamptz;

-- +goose Down
ALTER TABLE probe_rounds DROP COLUMN heartbeat_at;
