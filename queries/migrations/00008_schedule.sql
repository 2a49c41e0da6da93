-- +goose Up
-- The schedule of `probectl worker`: a release says how often its rounds start (`deploy record
-- --every`). NULL means no schedule: rounds run only by hand, as before. The column is additive
-- and nullable, so a previous binary, which neither reads nor writes it, keeps working. A
-- fan-out-off release derived by a rollback has none of its own and runs on the schedule of the
-- release it was derived from (see queries/worker.sql). River's own tables are migrated by
-- `probectl migrate` through River's migrator, not here.

ALTER TABLE releases
    ADD COLUMN round_every interval
        CONSTRAINT releases_round_every_bounds
        CHECK (round_every IS NULL OR round_every BETWEEN interval '5 seconds' AND interval '24 hours');

-- +goose Down
ALTER TABLE releases DROP COLUMN round_every;
