-- +goose Up
-- Alerts as facts of the finish (docs/alerts.md): each server's alert state, the events its
-- changes produce (a transactional outbox), the receivers they go to and every delivery attempt.
--
-- A trigger on probe_runs (probe_runs_alert, beside probe_runs_rollup from 00007) keeps the state
-- and writes the event in the very transaction that stores the run, whoever stores it: this
-- binary's finish, a batch, a replayed spool, or the previous binary's probe_finish, which knows
-- nothing of alerts. So a crash can neither lose a transition nor invent one. The event's
-- deliveries, and a River job for each (river_job, when River's tables exist), are inserted in
-- that transaction too. Additive only: new tables, new functions and a new trigger; nothing the
-- previous binary reads or calls changes.

-- The directory-wide policy: one row.
CREATE TABLE alert_policy (
    id           boolean     PRIMARY KEY DEFAULT true CHECK (id),
    down_after   integer     NOT NULL DEFAULT 2 CHECK (down_after BETWEEN 1 AND 100),
    up_after     integer     NOT NULL DEFAULT 1 CHECK (up_after BETWEEN 1 AND 100),
    storm_share  integer     NOT NULL DEFAULT 50 CHECK (storm_share BETWEEN 1 AND 100),
    storm_min    integer     NOT NULL DEFAULT 10 CHECK (storm_min BETWEEN 1 AND 100000),
    -- how often a firing alert is sent to Alertmanager again while it stays open
    resend_every interval    NOT NULL DEFAULT '1 minute'
                             CHECK (resend_every BETWEEN interval '1 second' AND interval '1 hour'),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text        NOT NULL DEFAULT ''
);
INSERT INTO alert_policy DEFAULT VALUES;

-- Where events go. The secret (standard-webhooks: "whsec_<base64>") is stored here, as the
-- directory's other settings are; no command ever prints it. A removed receiver keeps its row
-- (its deliveries' history refers to it) and its name is free again.
CREATE TABLE alert_receivers (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text        NOT NULL CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    url        text        NOT NULL,
    format     text        NOT NULL CHECK (format IN ('standard-webhooks', 'slack', 'alertmanager')),
    secret     text,
    events     text[]      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text        NOT NULL DEFAULT '',
    removed_at timestamptz
);
CREATE UNIQUE INDEX alert_receivers_name_idx ON alert_receivers (name) WHERE removed_at IS NULL;

-- One row per server: its alert state and the counts it is
-- derived from. streak_runs holds the ids of the current streak's runs (ok or failed), at most 10.
-- held_run_id is a failed run of held_round_id, a round not judged yet: it counts toward nothing
-- until its round is judged (at its end, alert_rounds_end, or at the server's next run of
-- another round), and then toward down only if the round was not degraded.
CREATE TABLE alert_states (
    server_id          bigint      PRIMARY KEY REFERENCES servers (id),
    state              text        NOT NULL DEFAULT 'unknown' CHECK (state IN ('up', 'down', 'unknown')),
    consecutive_ok     integer     NOT NULL DEFAULT 0,
    consecutive_failed integer     NOT NULL DEFAULT 0,
    streak_runs        bigint[]    NOT NULL DEFAULT '{}',
    held_round_id      bigint,
    held_run_id        bigint,
    last_run_id        bigint,
    last_run_at        timestamptz,
    tools_fingerprint  text,
    server_version     text,
    auth               text,
    open_event_id      uuid,
    changed_at         timestamptz
);

-- Every server has its row, made with the server (by any binary) or below for those before.
-- +goose StatementBegin
CREATE FUNCTION alert_states_for_server() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
BEGIN
    INSERT INTO alert_states (server_id) VALUES (NEW.id) ON CONFLICT (server_id) DO NOTHING;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

CREATE TRIGGER alert_states_for_server AFTER INSERT ON servers
    FOR EACH ROW EXECUTE FUNCTION alert_states_for_server();

INSERT INTO alert_states (server_id) SELECT id FROM servers;

-- Each round's running tally, in the shape of run_totals' shards (kind, outcome, server id mod
-- 16) so that a batch finish, which takes run_totals' rows in that order, takes these in the
-- same order and two batches never deadlock.
CREATE TABLE alert_round_tallies (
    round_id bigint   NOT NULL,
    kind     text     NOT NULL,
    outcome  text     NOT NULL,
    shard    smallint NOT NULL,
    runs     integer  NOT NULL,
    PRIMARY KEY (round_id, kind, outcome, shard)
);

-- The rounds judged degraded (the storm guard), with the tally that tipped them and their event.
CREATE TABLE alert_degraded_rounds (
    round_id    bigint      PRIMARY KEY,
    checked     integer     NOT NULL,
    failed      integer     NOT NULL,
    event_id    uuid,
    degraded_at timestamptz NOT NULL DEFAULT now()
);

-- The outbox. id is what a receiver sees as webhook-id; seq orders the events.
CREATE TABLE alert_events (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    seq            bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    type           text        NOT NULL CHECK (type IN ('server.down', 'server.recovered', 'server.tools_changed',
                                   'server.auth_changed', 'prober.degraded', 'round.dead', 'verify.failed')),
    server_id      bigint      REFERENCES servers (id),
    state          text,
    previous_state text,
    runs           bigint[]    NOT NULL DEFAULT '{}',
    round_id       bigint,
    data           jsonb       NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    -- a server.down event: when the server recovered, and the recovery's event
    resolved_at    timestamptz,
    resolved_by    uuid
);
CREATE INDEX alert_events_created_idx ON alert_events (created_at);
CREATE INDEX alert_events_open_idx ON alert_events (server_id) WHERE type = 'server.down' AND resolved_at IS NULL;

-- One row per event and receiver: pending until delivered (a 2xx) or failed (given up after 24 h).
-- lease_until: an attempt is being made, by whoever set it, until then; no transaction is held
-- across the request. An attempt is recorded only while it still holds its lease; a lease that
-- ran out without a record (its deliverer crashed) is taken by the next attempt.
CREATE TABLE alert_deliveries (
    event_id        uuid        NOT NULL REFERENCES alert_events (id),
    receiver_id     bigint      NOT NULL REFERENCES alert_receivers (id),
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,
    last_error      text,
    last_attempt_at timestamptz,
    done_at         timestamptz,
    lease_until     timestamptz,
    PRIMARY KEY (event_id, receiver_id)
);
CREATE INDEX alert_deliveries_pending_idx ON alert_deliveries (next_attempt_at) WHERE state = 'pending';

-- Every attempt, as it ended.
CREATE TABLE alert_delivery_attempts (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id    uuid        NOT NULL,
    receiver_id bigint      NOT NULL,
    attempt     integer     NOT NULL,
    status_code integer,
    error       text,
    at          timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (event_id, receiver_id) REFERENCES alert_deliveries (event_id, receiver_id)
);
CREATE INDEX alert_delivery_attempts_event_idx ON alert_delivery_attempts (event_id, receiver_id, attempt);

-- alert_emit writes one event (at p_at: a server's events carry the time its run ended, NULL: now), a delivery for each receiver that wants its type and, when River's
-- tables are there, a River job per delivery (kind probectl_alert_delivery, queue probectl_alerts,
-- run by `probectl worker`), all in the caller's transaction.
-- +goose StatementBegin
CREATE FUNCTION alert_emit(p_type text, p_server bigint, p_state text, p_previous text, p_runs bigint[],
                           p_round bigint, p_data jsonb, p_at timestamptz DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_id uuid;
BEGIN
    INSERT INTO alert_events (type, server_id, state, previous_state, runs, round_id, data, created_at)
    VALUES (p_type, p_server, p_state, p_previous, coalesce(p_runs, '{}'), p_round, coalesce(p_data, '{}'),
            coalesce(p_at, now()))
    RETURNING id INTO v_id;
    INSERT INTO alert_deliveries (event_id, receiver_id)
    SELECT v_id, r.id
      FROM alert_receivers AS r
     WHERE r.removed_at IS NULL AND p_type = ANY (r.events);
    IF FOUND AND to_regclass('river_job') IS NOT NULL THEN
        INSERT INTO river_job (args, kind, max_attempts, queue, priority)
        SELECT jsonb_build_object('event_id', v_id, 'receiver_id', d.receiver_id),
               'probectl_alert_delivery', 100, 'probectl_alerts', 1
          FROM alert_deliveries AS d
         WHERE d.event_id = v_id;
    END IF;
    RETURN v_id;
END
$probe$;
-- +goose StatementEnd

-- alert_judge_round judges a round by its whole tally: degraded when it checked at least storm_min
-- servers and at least storm_share per cent of them failed. It is called once the round is over
-- (at its end, or when a server's next run comes from another round), never on a prefix of the
-- round: failures finish faster than ok checks, so a prefix over-counts them. The first judgement
-- that finds it degraded records it and emits its one prober.degraded event. It says whether the
-- round is degraded.
-- +goose StatementBegin
CREATE FUNCTION alert_judge_round(p_round bigint, p_share integer, p_min integer) RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_checked integer;
    v_failed  integer;
    v_id      uuid;
BEGIN
    IF EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = p_round) THEN
        RETURN true;
    END IF;
    SELECT coalesce(sum(t.runs), 0), coalesce(sum(t.runs) FILTER (WHERE t.outcome <> 'ok'), 0)
      INTO v_checked, v_failed
      FROM alert_round_tallies AS t
     WHERE t.round_id = p_round;
    IF v_checked < p_min OR v_failed * 100 < p_share * v_checked THEN
        RETURN false;
    END IF;
    -- One event per round. The lock is only tried: a finish that holds it has not committed yet,
    -- and waiting for it could deadlock two batches; if it rolls back, the next judgement records it.
    IF pg_try_advisory_xact_lock(2024061500, 16 + (p_round % 1000000)::integer) THEN
        INSERT INTO alert_degraded_rounds (round_id, checked, failed)
        VALUES (p_round, v_checked, v_failed)
        ON CONFLICT (round_id) DO NOTHING;
        IF FOUND THEN
            v_id := alert_emit('prober.degraded', NULL, 'degraded', NULL, '{}', p_round,
                jsonb_build_object('checked', v_checked, 'failed', v_failed,
                                   'storm_share', p_share, 'storm_min', p_min));
            UPDATE alert_degraded_rounds SET event_id = v_id WHERE round_id = p_round;
        END IF;
    END IF;
    RETURN true;
END
$probe$;
-- +goose StatementEnd

-- alert_settle_held settles server p_server's held failure, whose round is over: counted toward
-- down (and the server.down event emitted, at the failed run's time) unless the round was
-- degraded, then forgotten. The caller holds the server's state row.
-- +goose StatementBegin
CREATE FUNCTION alert_settle_held(p_server bigint, p_share integer, p_min integer, p_down_after integer)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    s        record;
    v_failed integer;
    v_streak bigint[];
    v_state  text;
    v_open   uuid;
    v_changed timestamptz;
BEGIN
    SELECT a.state, a.consecutive_failed, a.streak_runs, a.open_event_id, a.changed_at, a.held_round_id,
           a.held_run_id, r.finished_at, r.result->>'error' AS error, r.result->>'outcome' AS outcome
      INTO s
      FROM alert_states AS a
      JOIN probe_runs AS r ON r.id = a.held_run_id
     WHERE a.server_id = p_server;
    IF NOT FOUND THEN
        UPDATE alert_states SET held_round_id = NULL, held_run_id = NULL WHERE server_id = p_server;
        RETURN;
    END IF;
    IF alert_judge_round(s.held_round_id, p_share, p_min) THEN
        UPDATE alert_states SET held_round_id = NULL, held_run_id = NULL WHERE server_id = p_server;
        RETURN;
    END IF;
    v_streak := CASE WHEN s.consecutive_failed = 0 THEN '{}'::bigint[] ELSE s.streak_runs END;
    v_streak := (v_streak || s.held_run_id)[greatest(1, cardinality(v_streak) - 8):];
    v_failed := s.consecutive_failed + 1;
    v_state := s.state;
    v_open := s.open_event_id;
    v_changed := s.changed_at;
    IF v_failed >= p_down_after AND v_state <> 'down' THEN
        v_state := 'down';
        v_changed := now();
        v_open := alert_emit('server.down', p_server, 'down', s.state, v_streak, s.held_round_id,
            jsonb_build_object('failed_checks', v_failed, 'error', s.error, 'outcome', s.outcome), s.finished_at);
    END IF;
    UPDATE alert_states
       SET state = v_state, consecutive_ok = 0, consecutive_failed = v_failed, streak_runs = v_streak,
           open_event_id = v_open, changed_at = v_changed, held_round_id = NULL, held_run_id = NULL
     WHERE server_id = p_server;
END
$probe$;
-- +goose StatementEnd

-- probe_runs_alert judges each stored run: the round's tally and storm guard, then the server's
-- state, tools and auth. Runs at probectl's fault (fenced, interrupted, late) say nothing about the
-- server and are left out, as from uptime; a run older than the last one judged (a replayed spool)
-- is left out too. It runs on every finish, so it is written for cost: one statement reads
-- everything (the result's fields, the job, the policy, the server's state, locked; ->> and not
-- jsonb_to_record, which cost 70 us a call more on these machines),
-- an ok run only bumps its round's tally, and one statement writes the state back.
-- +goose StatementBegin
CREATE FUNCTION probe_runs_alert() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    r          record;
    v_fail     boolean;
    v_degraded boolean := false;
    v_state    text;
    v_ok       integer;
    v_failed   integer;
    v_streak   bigint[];
    v_hround   bigint;
    v_hrun     bigint;
    v_open     uuid;
    v_changed  timestamptz;
    v_tools    text;
    v_version  text;
    v_auth     text;
    v_id       uuid;
BEGIN
    SELECT coalesce(x.outcome, '') AS outcome, x.summary, x.fault, x.error,
           nullif(x.tools_fingerprint, '') AS tools_fingerprint, coalesce(x.server_version, '') AS server_version,
           coalesce(nullif(x.auth, ''), 'none') AS auth,
           j.round_id, j.outcome AS job_outcome, s.kind,
           coalesce(p.down_after, 2) AS down_after, coalesce(p.up_after, 1) AS up_after,
           coalesce(p.storm_share, 50) AS storm_share, coalesce(p.storm_min, 10) AS storm_min,
           pr.finished_at AS round_finished_at, a.held_round_id, a.held_run_id,
           a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.last_run_at,
           a.tools_fingerprint AS last_tools, a.server_version AS last_version, a.auth AS last_auth,
           a.open_event_id, a.changed_at
      INTO r
      FROM (SELECT NEW.result->>'outcome' AS outcome, NEW.result->>'summary' AS summary, NEW.result->>'fault' AS fault,
                   NEW.result->>'error' AS error, NEW.result->>'tools_fingerprint' AS tools_fingerprint,
                   NEW.result->>'server_version' AS server_version, NEW.result->>'auth' AS auth) AS x
      JOIN probe_jobs AS j ON j.id = NEW.job_id
      JOIN servers AS s ON s.id = j.server_id
      JOIN alert_states AS a ON a.server_id = NEW.server_id
      LEFT JOIN probe_rounds AS pr ON pr.id = j.round_id
      LEFT JOIN alert_policy AS p ON true
       FOR UPDATE OF a;
    IF NOT FOUND                                          -- no state row: no alerts
       OR r.outcome NOT IN ('ok', 'failed', 'error')       -- not a check's result: nothing to judge
       OR r.fault IS NOT DISTINCT FROM 'probectl'          -- fenced
       OR r.summary IS NOT DISTINCT FROM 'interrupted'     -- stopped by probectl
       OR r.job_outcome IS NOT DISTINCT FROM 'abandoned'   -- late: its job was closed before it came
       OR r.last_run_at > NEW.started_at THEN              -- older than the last run judged
        RETURN NULL;
    END IF;
    -- The storm guard. Every run bumps its round's tally; the round is judged once it is over.
    IF r.round_id IS NOT NULL THEN
        INSERT INTO alert_round_tallies AS t (round_id, kind, outcome, shard, runs)
        VALUES (r.round_id, r.kind, r.outcome, (NEW.server_id % 16)::smallint, 1)
        ON CONFLICT (round_id, kind, outcome, shard) DO UPDATE SET runs = t.runs + 1;
    END IF;

    -- A failure held from another round (one that died, or ended while this failure's finish was
    -- committing) is settled first: that round is over for this server.
    IF r.held_round_id IS NOT NULL AND r.held_round_id IS DISTINCT FROM r.round_id THEN
        PERFORM alert_settle_held(NEW.server_id, r.storm_share, r.storm_min, r.down_after);
        SELECT a.state, a.consecutive_ok, a.consecutive_failed, a.streak_runs, a.open_event_id, a.changed_at
          INTO r.state, r.consecutive_ok, r.consecutive_failed, r.streak_runs, r.open_event_id, r.changed_at
          FROM alert_states AS a WHERE a.server_id = NEW.server_id;
        r.held_round_id := NULL;
    END IF;

    v_fail := r.outcome <> 'ok';
    v_state := r.state;
    v_ok := r.consecutive_ok;
    v_failed := r.consecutive_failed;
    v_streak := r.streak_runs;
    v_open := r.open_event_id;
    v_changed := r.changed_at;
    v_hround := r.held_round_id;
    v_hrun := r.held_run_id;

    IF v_fail AND r.round_id IS NOT NULL AND r.round_finished_at IS NULL THEN
        -- A failure of a round still running is held: it counts toward nothing until the round
        -- is judged on all its checks (alert_rounds_end).
        v_hround := r.round_id;
        v_hrun := NEW.id;
    ELSIF v_fail THEN
        -- A failure with no round, or of a round already over and judged: a failure of a
        -- degraded round counts toward nothing, the counts stay as they were.
        IF r.round_id IS NOT NULL THEN
            v_degraded := EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = r.round_id);
        END IF;
        IF NOT v_degraded THEN
            IF v_failed = 0 THEN
                v_streak := '{}';
            END IF;
            v_failed := v_failed + 1;
            v_ok := 0;
            v_streak := (v_streak || NEW.id)[greatest(1, cardinality(v_streak) - 8):];
            IF v_failed >= r.down_after AND v_state <> 'down' THEN
                v_state := 'down';
            END IF;
        END IF;
    ELSE
        -- An ok check; a failure held from its own round before it is superseded by it.
        v_hround := NULL;
        v_hrun := NULL;
        IF v_ok = 0 THEN
            v_streak := '{}';
        END IF;
        v_ok := v_ok + 1;
        v_failed := 0;
        v_streak := (v_streak || NEW.id)[greatest(1, cardinality(v_streak) - 8):];
        IF v_ok >= r.up_after AND v_state <> 'up' THEN
            v_state := 'up';
        END IF;
    END IF;

    IF v_state <> r.state THEN
        v_changed := now();
        IF v_state = 'down' THEN
            v_open := alert_emit('server.down', NEW.server_id, 'down', r.state, v_streak, r.round_id,
                jsonb_build_object('failed_checks', v_failed, 'error', r.error, 'outcome', r.outcome), NEW.finished_at);
        ELSIF r.state = 'down' THEN
            v_id := alert_emit('server.recovered', NEW.server_id, 'up', r.state, v_streak, r.round_id,
                jsonb_build_object('ok_checks', v_ok, 'down_event_id', v_open), NEW.finished_at);
            UPDATE alert_events SET resolved_at = NEW.finished_at, resolved_by = v_id WHERE id = v_open;
            v_open := NULL;
        END IF;
    END IF;

    -- What the server says it is, from its answers (ok runs only).
    v_tools := r.last_tools;
    v_version := r.last_version;
    v_auth := r.last_auth;
    IF NOT v_fail THEN
        IF r.tools_fingerprint IS NOT NULL THEN
            IF r.last_tools IS NOT NULL AND r.last_tools <> r.tools_fingerprint THEN
                PERFORM alert_emit('server.tools_changed', NEW.server_id, v_state, v_state, ARRAY[NEW.id], r.round_id,
                    jsonb_build_object('previous_fingerprint', r.last_tools, 'fingerprint', r.tools_fingerprint,
                                       'previous_version', r.last_version, 'version', r.server_version,
                                       'changed_without_version_bump', coalesce(r.last_version, '') = r.server_version),
                NEW.finished_at);
            END IF;
            v_tools := r.tools_fingerprint;
            v_version := r.server_version;
        END IF;
        IF r.last_auth IS NOT NULL AND r.last_auth <> r.auth THEN
            PERFORM alert_emit('server.auth_changed', NEW.server_id, v_state, v_state, ARRAY[NEW.id], r.round_id,
                jsonb_build_object('previous_auth', r.last_auth, 'auth', r.auth), NEW.finished_at);
        END IF;
        v_auth := r.auth;
    END IF;

    UPDATE alert_states AS a
       SET state = v_state, consecutive_ok = v_ok, consecutive_failed = v_failed, streak_runs = v_streak,
           held_round_id = v_hround, held_run_id = v_hrun, last_run_id = NEW.id, last_run_at = NEW.started_at,
           tools_fingerprint = v_tools, server_version = v_version, auth = v_auth, open_event_id = v_open,
           changed_at = v_changed
     WHERE a.server_id = NEW.server_id;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs
    FOR EACH ROW EXECUTE FUNCTION probe_runs_alert();

-- A round that ends is judged, on all its checks, and its held failures are settled: counted
-- toward down if it was not degraded, forgotten if it was. The states are taken in server order.
-- +goose StatementBegin
CREATE FUNCTION alert_rounds_end() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    p record;
    v_server bigint;
BEGIN
    SELECT coalesce(x.storm_share, 50) AS storm_share, coalesce(x.storm_min, 10) AS storm_min,
           coalesce(x.down_after, 2) AS down_after
      INTO p
      FROM (SELECT 1) AS one LEFT JOIN alert_policy AS x ON true;
    PERFORM alert_judge_round(NEW.id, p.storm_share, p.storm_min);
    FOR v_server IN
        SELECT a.server_id FROM alert_states AS a WHERE a.held_round_id = NEW.id ORDER BY a.server_id FOR UPDATE
    LOOP
        PERFORM alert_settle_held(v_server, p.storm_share, p.storm_min, p.down_after);
    END LOOP;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

CREATE TRIGGER alert_rounds_end AFTER UPDATE OF finished_at ON probe_rounds
    FOR EACH ROW WHEN (OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL)
    EXECUTE FUNCTION alert_rounds_end();

-- The rounds found dead (round.dead). A round is judged dead only when read: its heartbeat is older
-- than queries.RoundDeadAfter (or, without one, it started more than RoundDeadWithoutHeartbeat
-- ago). The worker leader's tick (and 'alerts deliver') calls alert_emit_dead_rounds, which marks
-- each such round here and emits its one event in the same transaction: the primary key makes a
-- second caller (another leader, a repeated tick, a concurrent 'alerts deliver') find it marked and
-- emit nothing.
CREATE TABLE alert_dead_rounds (
    round_id  bigint      PRIMARY KEY,
    event_id  uuid,
    judged_at timestamptz NOT NULL DEFAULT now()
);
-- Rounds that were dead before alerts existed are history, not news: marked, with no event.
INSERT INTO alert_dead_rounds (round_id)
SELECT id FROM probe_rounds
 WHERE finished_at IS NULL AND coalesce(heartbeat_at + interval '60 seconds', started_at + interval '30 minutes') < now();
-- The unfinished rounds, which the tick looks among every second.
CREATE INDEX probe_rounds_unfinished_idx ON probe_rounds (id) WHERE finished_at IS NULL;

-- alert_emit_dead_rounds emits one round.dead event for each round found dead and not yet
-- judged, at most p_limit of them (oldest first; the next call takes the rest), and returns how
-- many it emitted.
-- +goose StatementBegin
CREATE FUNCTION alert_emit_dead_rounds(p_dead_after interval, p_without_heartbeat interval, p_limit integer)
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

-- +goose Down
DROP FUNCTION alert_emit_dead_rounds(interval, interval, integer);
DROP INDEX probe_rounds_unfinished_idx;
DROP TABLE alert_dead_rounds;
DROP TRIGGER alert_rounds_end ON probe_rounds;
DROP FUNCTION alert_rounds_end();
DROP TRIGGER probe_runs_alert ON probe_runs;
DROP TRIGGER alert_states_for_server ON servers;
DROP FUNCTION alert_states_for_server();
DROP FUNCTION probe_runs_alert();
DROP FUNCTION alert_settle_held(bigint, integer, integer, integer);
DROP FUNCTION alert_judge_round(bigint, integer, integer);
DROP FUNCTION alert_emit(text, bigint, text, text, bigint[], bigint, jsonb, timestamptz);
DROP TABLE alert_delivery_attempts;
DROP TABLE alert_deliveries;
DROP TABLE alert_events;
DROP TABLE alert_degraded_rounds;
DROP TABLE alert_round_tallies;
DROP TABLE alert_states;
DROP TABLE alert_receivers;
DROP TABLE alert_policy;
