-- A probe_rounds row with every field chosen.
INSERT INTO probe_rounds (trigger, release_id, version, fanout, claim_limit, concurrency, started_at, finished_at,
                          heartbeat_at)
VALUES (@trigger, @release_id, @version, @fanout, @claim_limit, @concurrency, @started_at, @finished_at,
        @heartbeat_at)
RETURNING id;
