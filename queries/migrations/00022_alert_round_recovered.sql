-- +goose Up
-- A round found dead and recovered after all (docs/alerts.md): every job it claimed has its run
-- stored after all, because `runs recover` stored what its spool held (or its rescued
-- invocation finished it). Recovered before it is judged dead, it is judged recovered and never
-- alerted; recovered after its round.dead, it gets one round.recovered event, sent to the
-- receivers that had its round.dead (Alertmanager: the dead alert ends), and its round.dead event
-- is marked resolved. Additive only: nullable columns, a wider CHECK, new functions, and
-- alert_emit_dead_rounds (which the previous binary calls) replaced with the same signature.

ALTER TABLE alert_dead_rounds
    -- when the round was found recovered; with event_id NULL, it was recovered before it was
    -- judged dead and no round.dead was ever emitted
    ADD COLUMN recovered_at       timestamptz,
    -- the round.recovered event, when its round.dead had gone out
    ADD COLUMN recovered_event_id uuid,
    -- when it was last looked at for a recovery: a round alerted dead is looked at again at most
    -- every p_recheck, for p_recover_within after it was found dead, then its alert is final
    ADD COLUMN checked_at         timestamptz;

-- The alerted rounds not yet recovered, which every judgement looks among.
CREATE INDEX alert_dead_rounds_unrecovered_idx ON alert_dead_rounds (judged_at)
    WHERE event_id IS NOT NULL AND recovered_at IS NULL;

-- round.recovered joins the event types. The new check is wider than the old one, so the rows
-- there satisfy it; the table holds transitions only (small), its scan is short.
ALTER TABLE alert_events
    DROP CONSTRAINT alert_events_type_check,
    ADD CONSTRAINT alert_events_type_check CHECK (type IN ('server.down', 'server.recovered',
        'server.tools_changed', 'server.auth_changed', 'prober.degraded', 'round.dead', 'round.recovered',
        'verify.failed'));

-- alert_round_recovered: round p_round claimed jobs and every one of them has its run, so nothing
-- it claimed is lost. A job still open, or closed as abandoned with no run, says otherwise. A job
-- is closed either with its run (every finish stores both at once) or as abandoned (by the claim,
-- past the in-flight window), so only the abandoned ones are looked up for a run (a late one):
-- the look at a round that lost checks stops at its first such job. A run is looked up by its job
-- id alone: one stored by a previous binary's advance-first finish lies in the default partition
-- without its job's key.
-- +goose StatementBegin
CREATE FUNCTION alert_round_recovered(p_round bigint) RETURNS boolean
LANGUAGE sql STABLE
AS $probe$
    SELECT EXISTS (SELECT 1 FROM probe_jobs AS j WHERE j.round_id = p_round)
       AND NOT EXISTS (SELECT 1
                         FROM probe_jobs AS j
                        WHERE j.round_id = p_round
                          AND (j.finished_at IS NULL
                               OR (j.outcome = 'abandoned'
                                   AND NOT EXISTS (SELECT 1 FROM probe_runs AS r WHERE r.job_id = j.id))))
$probe$;
-- +goose StatementEnd

-- alert_judge_dead_rounds judges, at most p_limit of each (oldest first; the next call takes the
-- rest):
-- - each round found dead and not yet judged: recovered already (alert_round_recovered), it is
--   marked recovered and emits nothing; else it emits its one round.dead event;
-- - each round alerted dead within p_recover_within, not recovered, and not looked at for
--   p_recheck: recovered now, it emits one round.recovered event, to the receivers (not removed)
--   that had its round.dead, and resolves the round.dead event.
-- A round newly judged, dead or recovered, is over: its held failures are settled as at a round's
-- end (alert_rounds_end), on the tally it has: counted toward down unless it was degraded. Held,
-- they waited for the server's next run of another round, a whole check interval (12 h for most
-- servers) in which a server that went down in the dead round was not alerted.
-- It returns the rounds whose events it emitted (a round whose held failures it settled among
-- them: they may have emitted server.down). Idempotent: the marker's primary key, and its
-- row locked while a round is looked at, make a second caller emit nothing for the same round.
-- +goose StatementBegin
CREATE FUNCTION alert_judge_dead_rounds(p_dead_after interval, p_without_heartbeat interval, p_limit integer,
                                        p_recover_within interval, p_recheck interval)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    r        record;
    p        record;
    v_id     uuid;
    v_server bigint;
    v_held   boolean;
BEGIN
    SELECT coalesce(x.storm_share, 50) AS storm_share, coalesce(x.storm_min, 10) AS storm_min,
           coalesce(x.down_after, 2) AS down_after
      INTO p
      FROM (SELECT 1) AS one LEFT JOIN alert_policy AS x ON true;
    FOR r IN
        SELECT pr.id, pr.trigger, pr.version, pr.started_at, pr.heartbeat_at,
               (SELECT count(*) FROM probe_jobs AS j WHERE j.round_id = pr.id AND j.finished_at IS NULL) AS open_jobs
          FROM probe_rounds AS pr
         WHERE pr.finished_at IS NULL
           AND coalesce(pr.heartbeat_at + p_dead_after, pr.started_at + p_without_heartbeat) < now()
           AND NOT EXISTS (SELECT 1 FROM alert_dead_rounds AS d WHERE d.round_id = pr.id)
         ORDER BY pr.id
         LIMIT p_limit
    LOOP
        INSERT INTO alert_dead_rounds (round_id, checked_at) VALUES (r.id, now()) ON CONFLICT (round_id) DO NOTHING;
        CONTINUE WHEN NOT FOUND;
        v_held := false;
        FOR v_server IN
            SELECT a.server_id FROM alert_states AS a WHERE a.held_round_id = r.id ORDER BY a.server_id FOR UPDATE
        LOOP
            PERFORM alert_settle_held(v_server, p.storm_share, p.storm_min, p.down_after);
            v_held := true;
        END LOOP;
        IF r.open_jobs = 0 AND alert_round_recovered(r.id) THEN
            UPDATE alert_dead_rounds SET recovered_at = now() WHERE round_id = r.id;
            IF v_held THEN
                RETURN NEXT r.id; -- its settled failures may have emitted server.down events
            END IF;
            CONTINUE;
        END IF;
        v_id := alert_emit('round.dead', NULL, 'dead', 'running', '{}', r.id,
            jsonb_build_object('trigger', r.trigger, 'version', r.version, 'started_at', r.started_at,
                               'heartbeat_at', r.heartbeat_at, 'open_jobs', r.open_jobs));
        UPDATE alert_dead_rounds SET event_id = v_id WHERE round_id = r.id;
        RETURN NEXT r.id;
    END LOOP;

    FOR r IN
        SELECT d.round_id, d.event_id, d.judged_at
          FROM alert_dead_rounds AS d
         WHERE d.event_id IS NOT NULL AND d.recovered_at IS NULL
           AND d.judged_at > now() - p_recover_within
           AND coalesce(d.checked_at, d.judged_at) <= now() - p_recheck
         ORDER BY d.round_id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    LOOP
        IF NOT alert_round_recovered(r.round_id) THEN
            UPDATE alert_dead_rounds SET checked_at = now() WHERE round_id = r.round_id;
            CONTINUE;
        END IF;
        -- Failures the recovery stored were held again (the round never finished): settled now.
        FOR v_server IN
            SELECT a.server_id FROM alert_states AS a WHERE a.held_round_id = r.round_id ORDER BY a.server_id FOR UPDATE
        LOOP
            PERFORM alert_settle_held(v_server, p.storm_share, p.storm_min, p.down_after);
        END LOOP;
        INSERT INTO alert_events (type, server_id, state, previous_state, runs, round_id, data)
        VALUES ('round.recovered', NULL, 'recovered', 'dead', '{}', r.round_id,
                jsonb_build_object('dead_event_id', r.event_id, 'found_dead_at', r.judged_at,
                                   'jobs', (SELECT count(*) FROM probe_jobs AS j WHERE j.round_id = r.round_id)))
        RETURNING id INTO v_id;
        INSERT INTO alert_deliveries (event_id, receiver_id)
        SELECT v_id, d.receiver_id
          FROM alert_deliveries AS d
          JOIN alert_receivers AS rc ON rc.id = d.receiver_id AND rc.removed_at IS NULL
         WHERE d.event_id = r.event_id;
        IF FOUND AND to_regclass('river_job') IS NOT NULL THEN
            INSERT INTO river_job (args, kind, max_attempts, queue, priority)
            SELECT jsonb_build_object('event_id', v_id, 'receiver_id', d.receiver_id),
                   'probectl_alert_delivery', 100, 'probectl_alerts', 1
              FROM alert_deliveries AS d
             WHERE d.event_id = v_id;
        END IF;
        UPDATE alert_events SET resolved_at = now(), resolved_by = v_id WHERE id = r.event_id;
        UPDATE alert_dead_rounds SET recovered_at = now(), recovered_event_id = v_id, checked_at = now()
         WHERE round_id = r.round_id;
        RETURN NEXT r.round_id;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

-- The previous binary's call judges rounds dead the same way, but never recovers one: it knows no
-- round.recovered event (its Alertmanager payload would have no alert name, its Slack text a bare
-- type), so a recovery within zero time is none; this binary's judgement recovers the rounds later.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION alert_emit_dead_rounds(p_dead_after interval, p_without_heartbeat interval, p_limit integer)
RETURNS integer
LANGUAGE sql VOLATILE
AS $probe$
    SELECT count(*)::integer
      FROM alert_judge_dead_rounds(p_dead_after, p_without_heartbeat, p_limit, interval '0 seconds', interval '1 minute')
$probe$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION alert_emit_dead_rounds(p_dead_after interval, p_without_heartbeat interval, p_limit integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    r    record;
    v_id uuid;
    v_n  integer := 0;
BEGIN
    FOR r IN
        SELECT pr.id, pr.trigger, pr.version, pr.started_at, pr.heartbeat_at,
               (SELECT count(*) FROM probe_jobs AS j WHERE j.round_id = pr.id AND j.finished_at IS NULL) AS open_jobs
          FROM probe_rounds AS pr
         WHERE pr.finished_at IS NULL
           AND coalesce(pr.heartbeat_at + p_dead_after, pr.started_at + p_without_heartbeat) < now()
           AND NOT EXISTS (SELECT 1 FROM alert_dead_rounds AS d WHERE d.round_id = pr.id)
         ORDER BY pr.id
         LIMIT p_limit
    LOOP
        INSERT INTO alert_dead_rounds (round_id) VALUES (r.id) ON CONFLICT (round_id) DO NOTHING;
        IF FOUND THEN
            v_id := alert_emit('round.dead', NULL, 'dead', 'running', '{}', r.id,
                jsonb_build_object('trigger', r.trigger, 'version', r.version, 'started_at', r.started_at,
                                   'heartbeat_at', r.heartbeat_at, 'open_jobs', r.open_jobs));
            UPDATE alert_dead_rounds SET event_id = v_id WHERE round_id = r.id;
            v_n := v_n + 1;
        END IF;
    END LOOP;
    RETURN v_n;
END
$probe$;
-- +goose StatementEnd
DROP FUNCTION alert_judge_dead_rounds(interval, interval, integer, interval, interval);
DROP FUNCTION alert_round_recovered(bigint);
DELETE FROM alert_delivery_attempts AS a USING alert_events AS e WHERE e.id = a.event_id AND e.type = 'round.recovered';
DELETE FROM alert_deliveries AS d USING alert_events AS e WHERE e.id = d.event_id AND e.type = 'round.recovered';
DELETE FROM alert_events WHERE type = 'round.recovered';
ALTER TABLE alert_events
    DROP CONSTRAINT alert_events_type_check,
    ADD CONSTRAINT alert_events_type_check CHECK (type IN ('server.down', 'server.recovered',
        'server.tools_changed', 'server.auth_changed', 'prober.degraded', 'round.dead', 'verify.failed'));
DROP INDEX alert_dead_rounds_unrecovered_idx;
ALTER TABLE alert_dead_rounds DROP COLUMN checked_at, DROP COLUMN recovered_event_id, DROP COLUMN recovered_at;
