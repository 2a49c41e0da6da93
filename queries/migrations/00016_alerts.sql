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

-- One row per server that has runs since this migration: its alert state and the counts it is
-- derived from. streak_runs holds the ids of the current streak's runs (ok or failed), at most 10.
-- failed_round_id is the round of the last failure counted: if that round turns out degraded,
-- the next run of the server takes the failure back.
CREATE TABLE alert_states (
    server_id          bigint      PRIMARY KEY REFERENCES servers (id),
    state              text        NOT NULL DEFAULT 'unknown' CHECK (state IN ('up', 'down', 'unknown')),
    consecutive_ok     integer     NOT NULL DEFAULT 0,
    consecutive_failed integer     NOT NULL DEFAULT 0,
    streak_runs        bigint[]    NOT NULL DEFAULT '{}',
    failed_round_id    bigint,
    last_run_id        bigint,
    last_run_at        timestamptz,
    tools_fingerprint  text,
    server_version     text,
    auth               text,
    open_event_id      uuid,
    changed_at         timestamptz
);

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

-- alert_emit writes one event, a delivery for each receiver that wants its type and, when River's
-- tables are there, a River job per delivery (kind probectl_alert_delivery, queue probectl_alerts,
-- run by `probectl worker`), all in the caller's transaction.
-- +goose StatementBegin
CREATE FUNCTION alert_emit(p_type text, p_server bigint, p_state text, p_previous text, p_runs bigint[],
                           p_round bigint, p_data jsonb)
RETURNS uuid
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_id uuid;
BEGIN
    INSERT INTO alert_events (type, server_id, state, previous_state, runs, round_id, data)
    VALUES (p_type, p_server, p_state, p_previous, coalesce(p_runs, '{}'), p_round, coalesce(p_data, '{}'))
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

-- probe_runs_alert judges each stored run: the round's tally and storm guard, then the server's
-- state, tools and auth. Runs at probectl's fault (fenced, interrupted, late) say nothing about the
-- server and are left out, as from uptime; a run older than the last one judged (a replayed spool)
-- is left out too.
-- +goose StatementBegin
CREATE FUNCTION probe_runs_alert() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_outcome  text    := coalesce(NEW.result->>'outcome', '');
    v_fail     boolean := coalesce(NEW.result->>'outcome', '') <> 'ok';
    v_tools    text    := nullif(NEW.result->>'tools_fingerprint', '');
    v_version  text    := coalesce(NEW.result->>'server_version', '');
    v_auth     text    := coalesce(nullif(NEW.result->>'auth', ''), 'none');
    v_round    bigint;
    v_job_out  text;
    v_kind     text;
    v_pol      alert_policy;
    st         alert_states;
    v_checked  integer;
    v_failed   integer;
    v_degraded boolean := false;
    v_prev     text;
    v_id       uuid;
BEGIN
    IF NEW.result->>'fault' IS NOT DISTINCT FROM 'probectl'
       OR NEW.result->>'summary' IS NOT DISTINCT FROM 'interrupted' THEN
        RETURN NULL;
    END IF;
    SELECT j.round_id, j.outcome, s.kind INTO v_round, v_job_out, v_kind
      FROM probe_jobs AS j JOIN servers AS s ON s.id = j.server_id
     WHERE j.id = NEW.job_id;
    IF v_job_out IS NOT DISTINCT FROM 'abandoned' THEN
        RETURN NULL; -- a late run: its job was closed before the run came
    END IF;
    SELECT * INTO v_pol FROM alert_policy LIMIT 1;
    IF NOT FOUND THEN
        v_pol := ROW(true, 2, 1, 50, 10, interval '1 minute', now(), '')::alert_policy;
    END IF;

    -- The server's row, locked: inserted on its first run, else locked by the no-op update.
    INSERT INTO alert_states AS a (server_id) VALUES (NEW.server_id)
    ON CONFLICT (server_id) DO UPDATE SET server_id = a.server_id
    RETURNING a.* INTO st;
    IF st.last_run_at > NEW.started_at THEN
        RETURN NULL;
    END IF;

    -- The storm guard: the round's tally, judged at every run of a round not degraded yet (an ok
    -- run too: the round may have failed first and succeeded last).
    IF v_round IS NOT NULL THEN
        INSERT INTO alert_round_tallies AS t (round_id, kind, outcome, shard, runs)
        VALUES (v_round, v_kind, v_outcome, (NEW.server_id % 16)::smallint, 1)
        ON CONFLICT (round_id, kind, outcome, shard) DO UPDATE SET runs = t.runs + 1;
        v_degraded := EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = v_round);
        IF NOT v_degraded THEN
            SELECT sum(t.runs), coalesce(sum(t.runs) FILTER (WHERE t.outcome <> 'ok'), 0)
              INTO v_checked, v_failed
              FROM alert_round_tallies AS t
             WHERE t.round_id = v_round;
            IF v_checked >= v_pol.storm_min AND v_failed * 100 >= v_pol.storm_share * v_checked THEN
                v_degraded := true;
                -- One event per round. The lock is only tried: a finish that holds it has not
                -- committed yet, and waiting for it could deadlock two batches; if it rolls
                -- back, the round's next run judges again.
                IF pg_try_advisory_xact_lock(2024061500, 16 + (v_round % 1000000)::integer) THEN
                    INSERT INTO alert_degraded_rounds (round_id, checked, failed)
                    VALUES (v_round, v_checked, v_failed)
                    ON CONFLICT (round_id) DO NOTHING;
                    IF FOUND THEN
                        v_id := alert_emit('prober.degraded', NULL, 'degraded', NULL, '{}', v_round,
                            jsonb_build_object('checked', v_checked, 'failed', v_failed,
                                               'storm_share', v_pol.storm_share, 'storm_min', v_pol.storm_min));
                        UPDATE alert_degraded_rounds SET event_id = v_id WHERE round_id = v_round;
                    END IF;
                END IF;
            END IF;
        END IF;
    END IF;

    -- A failure counted from a round judged degraded since is taken back (unless it took the
    -- server down: that event was sent, and stands until the server recovers).
    IF st.failed_round_id IS NOT NULL AND st.state <> 'down' AND st.consecutive_failed > 0
       AND EXISTS (SELECT 1 FROM alert_degraded_rounds AS d WHERE d.round_id = st.failed_round_id) THEN
        st.consecutive_failed := st.consecutive_failed - 1;
        st.streak_runs := st.streak_runs[1:cardinality(st.streak_runs) - 1];
        st.failed_round_id := NULL;
    END IF;

    v_prev := st.state;
    st.last_run_id := NEW.id;
    st.last_run_at := NEW.started_at;
    IF v_fail THEN
        -- A failure in a degraded round counts toward nothing: the counts stay as they were.
        IF NOT v_degraded THEN
            IF st.consecutive_failed = 0 THEN
                st.streak_runs := '{}';
            END IF;
            st.consecutive_failed := st.consecutive_failed + 1;
            st.consecutive_ok := 0;
            st.streak_runs := (st.streak_runs || NEW.id)[greatest(1, cardinality(st.streak_runs) - 8):];
            st.failed_round_id := v_round;
            IF st.consecutive_failed >= v_pol.down_after AND st.state <> 'down' THEN
                st.state := 'down';
            END IF;
        END IF;
    ELSE
        IF st.consecutive_ok = 0 THEN
            st.streak_runs := '{}';
        END IF;
        st.consecutive_ok := st.consecutive_ok + 1;
        st.consecutive_failed := 0;
        st.failed_round_id := NULL;
        st.streak_runs := (st.streak_runs || NEW.id)[greatest(1, cardinality(st.streak_runs) - 8):];
        IF st.consecutive_ok >= v_pol.up_after AND st.state <> 'up' THEN
            st.state := 'up';
        END IF;
    END IF;

    IF st.state <> v_prev THEN
        st.changed_at := now();
        IF st.state = 'down' THEN
            st.open_event_id := alert_emit('server.down', NEW.server_id, 'down', v_prev, st.streak_runs, v_round,
                jsonb_build_object('failed_checks', st.consecutive_failed, 'error', NEW.result->>'error',
                                   'outcome', v_outcome));
        ELSIF v_prev = 'down' THEN
            v_id := alert_emit('server.recovered', NEW.server_id, 'up', v_prev, st.streak_runs, v_round,
                jsonb_build_object('ok_checks', st.consecutive_ok, 'down_event_id', st.open_event_id));
            UPDATE alert_events SET resolved_at = now(), resolved_by = v_id WHERE id = st.open_event_id;
            st.open_event_id := NULL;
        END IF;
    END IF;

    -- What the server says it is, from its answers (ok runs only).
    IF NOT v_fail THEN
        IF v_tools IS NOT NULL THEN
            IF st.tools_fingerprint IS NOT NULL AND st.tools_fingerprint <> v_tools THEN
                PERFORM alert_emit('server.tools_changed', NEW.server_id, st.state, st.state, ARRAY[NEW.id], v_round,
                    jsonb_build_object('previous_fingerprint', st.tools_fingerprint, 'fingerprint', v_tools,
                                       'previous_version', st.server_version, 'version', v_version,
                                       'changed_without_version_bump', coalesce(st.server_version, '') = v_version));
            END IF;
            st.tools_fingerprint := v_tools;
            st.server_version := v_version;
        END IF;
        IF st.auth IS NOT NULL AND st.auth <> v_auth THEN
            PERFORM alert_emit('server.auth_changed', NEW.server_id, st.state, st.state, ARRAY[NEW.id], v_round,
                jsonb_build_object('previous_auth', st.auth, 'auth', v_auth));
        END IF;
        st.auth := v_auth;
    END IF;

    UPDATE alert_states AS a
       SET state = st.state, consecutive_ok = st.consecutive_ok, consecutive_failed = st.consecutive_failed,
           streak_runs = st.streak_runs, failed_round_id = st.failed_round_id, last_run_id = st.last_run_id,
           last_run_at = st.last_run_at, tools_fingerprint = st.tools_fingerprint,
           server_version = st.server_version, auth = st.auth, open_event_id = st.open_event_id,
           changed_at = st.changed_at
     WHERE a.server_id = NEW.server_id;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs
    FOR EACH ROW EXECUTE FUNCTION probe_runs_alert();

-- +goose Down
DROP TRIGGER probe_runs_alert ON probe_runs;
DROP FUNCTION probe_runs_alert();
DROP FUNCTION alert_emit(text, bigint, text, text, bigint[], bigint, jsonb);
DROP TABLE alert_delivery_attempts;
DROP TABLE alert_deliveries;
DROP TABLE alert_events;
DROP TABLE alert_degraded_rounds;
DROP TABLE alert_round_tallies;
DROP TABLE alert_states;
DROP TABLE alert_receivers;
DROP TABLE alert_policy;
