-- +goose Up
-- Partitions, after 00017 (docs/retention.md): reads of one server bounded by the partition key,
-- maintenance that keeps what a prune recorded and makes one range per transaction, and a prune
-- that checks again, once a partition is detached, that an export holds every run it had.
-- Additive only: a new view and new functions; the functions 00017 made keep their signatures
-- and what they return (the previous binary calls them).

-- run_facts (00007, 00017) with each run's result and partition key, job_requested_at, so that a read of one
-- server's runs can bound it and the planner prunes the partitions outside the bound. A run's job
-- is requested before its check starts, and the check starts within a day of it
-- (queries.RunKeyLag): runs started from T on are keyed from T - 1 day on. A run stored before
-- 00017 is keyed '-infinity' (the legacy partition) and one a previous binary's advance-first
-- finish stored has no key (NULL: the default partition); a bounded read takes both in.
-- run_facts itself keeps its columns: the previous binary reads it by name.
CREATE OR REPLACE VIEW run_facts_keyed AS
SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
       coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
       coalesce(r.result->>'summary', '') AS summary,
       nullif(r.result->>'error', '') AS error,
       r.requests, r.started_at, r.finished_at,
       r.envelope->'signatures'->0->>'keyid' AS key_id,
       (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
        OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
        OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault,
       r.job_requested_at, r.result
  FROM probe_runs AS r
  JOIN LATERAL (
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND k.requested_at = r.job_requested_at
        UNION ALL
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND (r.job_requested_at IS NULL OR r.job_requested_at = '-infinity')
       ) AS j ON true
  JOIN servers AS s ON s.id = r.server_id;

-- Maintenance, one range per call (and so per transaction: each call is a statement of its own):
-- the first range from p_from on, before p_to, that no kept partition covers. A range a prune
-- dropped is not made again: its record (when it was dropped, the archive that holds its runs,
-- the run ids it held) is what `runs show` and the audits' refusal read; it comes back with
-- pruned_at and export_id set and nothing made. A range not made yet is made as
-- probe_partitions_ensure (00017) makes it, waiting at most p_lock_timeout for each lock (the
-- default partitions', the parent tables', servers' for the foreign keys; the caller tries
-- again), so that a finish queued behind it waits no longer than that. No row: nothing left to
-- make. With p_dry_run it says what it would do and does nothing.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partitions_ensure_next(
    p_from         timestamptz,
    p_to           timestamptz,
    p_unit         text     DEFAULT NULL,
    p_dry_run      boolean  DEFAULT false,
    p_lock_timeout interval DEFAULT interval '1 second'
) RETURNS TABLE (
    parent     text,
    table_name text,
    range_from timestamptz,
    range_to   timestamptz,
    moved_rows bigint,
    pruned_at  timestamptz,
    export_id  bigint
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_unit  text := coalesce(p_unit, (SELECT r.partition_unit FROM probe_retention AS r), 'day');
    v_step  interval;
    v_lo    timestamptz;
    v_hi    timestamptz;
    v_cover timestamptz;
    v_gone  record;
    v_jobs  text;
    v_runs  text;
    v_moved bigint;
    v_n     bigint;
BEGIN
    IF v_unit NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'partition unit % is not day or week', v_unit USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_step := CASE v_unit WHEN 'week' THEN interval '7 days' ELSE interval '1 day' END;
    v_lo := date_trunc(v_unit, p_from, 'UTC');
    IF NOT p_dry_run THEN
        PERFORM set_config('lock_timeout', (extract(epoch FROM p_lock_timeout) * 1000)::bigint::text, true);
        -- One maintenance at a time (a second one waits, then finds the partitions made).
        PERFORM pg_advisory_xact_lock(482956239462);
    END IF;
    WHILE v_lo < p_to LOOP
        v_hi := date_trunc(v_unit, v_lo, 'UTC') + v_step;
        SELECT p.range_to INTO v_cover FROM probe_partitions AS p
         WHERE p.parent = 'probe_jobs' AND p.dropped_at IS NULL AND p.range_from <= v_lo AND p.range_to > v_lo;
        IF FOUND THEN
            v_lo := v_cover;
            CONTINUE;
        END IF;
        -- Pruned: kept pruned, and said so.
        SELECT p.table_name AS jobs, r.table_name AS runs, p.range_to, p.dropped_at, r.export_id INTO v_gone
          FROM probe_partitions AS p
          LEFT JOIN probe_partitions AS r ON r.parent = 'probe_runs' AND r.range_from = p.range_from AND r.range_to = p.range_to
         WHERE p.parent = 'probe_jobs' AND p.dropped_at IS NOT NULL AND p.range_from <= v_lo AND p.range_to > v_lo
         ORDER BY p.dropped_at DESC
         LIMIT 1;
        IF FOUND THEN
            parent := 'probe_jobs'; table_name := v_gone.jobs; range_from := v_lo; range_to := v_gone.range_to;
            moved_rows := 0; pruned_at := v_gone.dropped_at; export_id := v_gone.export_id;
            RETURN NEXT;
            parent := 'probe_runs'; table_name := coalesce(v_gone.runs, v_gone.jobs);
            RETURN NEXT;
            RETURN;
        END IF;
        -- The range ends where the next partition, kept or pruned, begins.
        SELECT min(p.range_from) INTO v_cover FROM probe_partitions AS p
         WHERE p.parent = 'probe_jobs' AND p.range_from > v_lo AND p.range_from < v_hi;
        IF v_cover IS NOT NULL THEN
            v_hi := v_cover;
        END IF;
        v_jobs := 'probe_jobs_p' || to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD');
        v_runs := 'probe_runs_p' || to_char(v_lo AT TIME ZONE 'UTC', 'YYYYMMDD');

        SELECT count(*) INTO v_moved FROM probe_jobs_default AS d WHERE d.requested_at >= v_lo AND d.requested_at < v_hi;
        SELECT count(*) INTO v_n FROM probe_runs_default AS d WHERE d.job_requested_at >= v_lo AND d.job_requested_at < v_hi;
        IF NOT p_dry_run THEN
            -- ATTACH takes this lock too; taken first, no row can reach the default partitions
            -- between the move and the attach.
            LOCK TABLE probe_jobs_default, probe_runs_default IN ACCESS EXCLUSIVE MODE;
            EXECUTE format('CREATE TABLE %I (LIKE probe_jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_jobs);
            EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id), ADD FOREIGN KEY (server_id) REFERENCES servers (id), '
                           'ADD FOREIGN KEY (round_id) REFERENCES probe_rounds (id), '
                           'ADD CONSTRAINT %I CHECK (requested_at >= %L AND requested_at < %L)',
                           v_jobs, v_jobs || '_range', v_lo, v_hi);
            EXECUTE format('WITH m AS (DELETE FROM probe_jobs_default AS d WHERE d.requested_at >= %L AND d.requested_at < %L RETURNING d.*) '
                           'INSERT INTO %I SELECT * FROM m', v_lo, v_hi, v_jobs);
            GET DIAGNOSTICS v_moved = ROW_COUNT;
            EXECUTE format('ALTER TABLE probe_jobs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', v_jobs, v_lo, v_hi);
            -- The moved open jobs keep their open-job rows (the move's delete gave them back).
            EXECUTE format('INSERT INTO probe_open_jobs (job_id, server_id, requested_at) '
                           'SELECT j.id, j.server_id, j.requested_at FROM %I AS j WHERE j.finished_at IS NULL '
                           'ON CONFLICT DO NOTHING', v_jobs);

            EXECUTE format('CREATE TABLE %I (LIKE probe_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_runs);
            EXECUTE format('ALTER TABLE %I ADD PRIMARY KEY (id), ADD UNIQUE (job_id), '
                           'ADD FOREIGN KEY (job_id) REFERENCES %I (id), ADD FOREIGN KEY (server_id) REFERENCES servers (id), '
                           'ADD CONSTRAINT %I CHECK (job_requested_at >= %L AND job_requested_at < %L)',
                           v_runs, v_jobs, v_runs || '_range', v_lo, v_hi);
            EXECUTE format('WITH m AS (DELETE FROM probe_runs_default AS d WHERE d.job_requested_at >= %L AND d.job_requested_at < %L RETURNING d.*) '
                           'INSERT INTO %I SELECT * FROM m', v_lo, v_hi, v_runs);
            GET DIAGNOSTICS v_n = ROW_COUNT;
            EXECUTE format('ALTER TABLE probe_runs ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', v_runs, v_lo, v_hi);

            -- A name a pruned partition had is not taken again (the range would be covered by it).
            INSERT INTO probe_partitions (table_name, parent, range_from, range_to)
            VALUES (v_jobs, 'probe_jobs', v_lo, v_hi), (v_runs, 'probe_runs', v_lo, v_hi);
        END IF;
        parent := 'probe_jobs'; table_name := v_jobs; range_from := v_lo; range_to := v_hi; moved_rows := v_moved;
        pruned_at := NULL; export_id := NULL;
        RETURN NEXT;
        parent := 'probe_runs'; table_name := v_runs; moved_rows := v_n;
        RETURN NEXT;
        RETURN;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

-- 00017's maintenance, which the previous binary calls: the same, except that a range a prune
-- dropped is passed over rather than made again under the same name (which cleared the record of
-- the prune: when, and which archive holds its runs).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partitions_ensure(
    p_from    timestamptz,
    p_to      timestamptz,
    p_unit    text    DEFAULT NULL,
    p_dry_run boolean DEFAULT false
) RETURNS TABLE (
    parent     text,
    table_name text,
    range_from timestamptz,
    range_to   timestamptz,
    moved_rows bigint
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_from timestamptz := p_from;
    v_p    record;
    v_last timestamptz;
BEGIN
    LOOP
        v_last := NULL;
        FOR v_p IN SELECT * FROM probe_partitions_ensure_next(v_from, p_to, p_unit, p_dry_run, interval '10 seconds') LOOP
            v_last := v_p.range_to;
            IF v_p.pruned_at IS NULL THEN
                parent := v_p.parent; table_name := v_p.table_name; range_from := v_p.range_from;
                range_to := v_p.range_to; moved_rows := v_p.moved_rows;
                RETURN NEXT;
            END IF;
        END LOOP;
        EXIT WHEN v_last IS NULL;
        v_from := v_last;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

-- Detach one runs or jobs partition for a prune that holds it covered by export p_export_id
-- (NULL: pruned with --without-export). Once detached, in the same transaction (the partition's
-- lock held: no run can reach it any more), its run ids are read again: a run stored in the range
-- after the prune judged the export to cover it (a late run, a replayed spool) has an id the
-- export did not reach, and then the detach is undone (the transaction fails, the partition stays
-- attached) with SQLSTATE PRB01, naming the run. 00017's probe_partition_detach(text, interval),
-- which the previous binary calls, stays as it was.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partition_detach(p_table text, p_lock_timeout interval, p_export_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_parent text := (SELECT p.parent FROM probe_partitions AS p WHERE p.table_name = p_table);
    v_min    bigint;
    v_max    bigint;
    v_upto   bigint;
BEGIN
    IF v_parent IS NULL THEN
        RAISE EXCEPTION 'no partition %', p_table USING ERRCODE = 'undefined_table';
    END IF;
    IF to_regclass(p_table) IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_inherits AS i WHERE i.inhrelid = to_regclass(p_table)) THEN
        RETURN false;
    END IF;
    PERFORM set_config('lock_timeout', (extract(epoch FROM p_lock_timeout) * 1000)::bigint::text, true);
    EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', v_parent, p_table);
    IF v_parent = 'probe_runs' THEN
        EXECUTE format('SELECT min(id), max(id) FROM %I', p_table) INTO v_min, v_max;
        IF p_export_id IS NOT NULL THEN
            SELECT e.max_run_id INTO v_upto FROM probe_run_exports AS e WHERE e.id = p_export_id;
            IF v_max IS NOT NULL AND (v_upto IS NULL OR v_max > v_upto) THEN
                RAISE EXCEPTION 'partition % holds run %, stored after export % (which reaches run %): kept', p_table, v_max, p_export_id, v_upto
                      USING ERRCODE = 'PRB01',
                            HINT = 'export the range again, then prune';
            END IF;
        END IF;
        UPDATE probe_partitions AS p SET min_run_id = v_min, max_run_id = v_max WHERE p.table_name = p_table;
    END IF;
    RETURN true;
END
$probe$;
-- +goose StatementEnd

-- Exactly once across partitions. UNIQUE (job_id) is each partition's own: a run of a job in its
-- day's partition and one in the default partition (a previous binary's advance-first finish
-- stores no key: NULL, the default partition) do not meet there, and a duplicate within a
-- partition is reported under that partition's constraint name, which RunAlreadyStored (of this
-- binary and the previous one) does not know. Before each insert, with the job's row locked (two
-- finishes of one job take turns; probe_finish holds it already), this looks for a run of the job
-- where another could be: the job's partition and the default one for a keyed run, every partition
-- for a keyless one; and refuses the insert as the unpartitioned table did, unique_violation on
-- probe_runs_job_id_key.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_once() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_run bigint;
BEGIN
    IF NEW.job_requested_at IS NULL THEN
        PERFORM 1 FROM probe_jobs AS j WHERE j.id = NEW.job_id FOR NO KEY UPDATE;
        SELECT r.id INTO v_run FROM probe_runs AS r WHERE r.job_id = NEW.job_id LIMIT 1;
    ELSIF NEW.job_requested_at <> '-infinity' THEN
        PERFORM 1 FROM probe_jobs AS j WHERE j.id = NEW.job_id AND j.requested_at = NEW.job_requested_at FOR NO KEY UPDATE;
        SELECT r.id INTO v_run FROM probe_runs AS r
         WHERE r.job_id = NEW.job_id AND (r.job_requested_at = NEW.job_requested_at OR r.job_requested_at IS NULL)
         LIMIT 1;
    END IF;
    IF v_run IS NOT NULL THEN
        RAISE EXCEPTION 'duplicate key value violates unique constraint "probe_runs_job_id_key"'
              USING ERRCODE = 'unique_violation', CONSTRAINT = 'probe_runs_job_id_key', TABLE = 'probe_runs',
                    DETAIL = format('Key (job_id)=(%s) already exists: run %s.', NEW.job_id, v_run);
    END IF;
    RETURN NEW;
END
$probe$;
-- +goose StatementEnd

DROP TRIGGER IF EXISTS probe_runs_once ON probe_runs;
CREATE TRIGGER probe_runs_once BEFORE INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_once();

-- +goose Down
-- probe_partitions_ensure stays as above (it calls probe_partitions_ensure_next, which stays too):
-- made again under a pruned range's name, a partition would clear the record of the prune.
DROP TRIGGER probe_runs_once ON probe_runs;
DROP FUNCTION probe_runs_once();
DROP FUNCTION probe_partition_detach(text, interval, bigint);
DROP VIEW run_facts_keyed;
