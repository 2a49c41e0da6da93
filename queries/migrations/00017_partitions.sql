-- +goose NO TRANSACTION
-- +goose Up
-- probe_jobs and probe_runs partitioned by the time the job was requested (docs/retention.md).
--
-- The migration runs without one enclosing transaction so that no step that scans a large table
-- holds an exclusive lock: (1) probe_runs gets its partition key, job_requested_at, as a column
-- with a constant default (a catalog change: the runs stored so far read -infinity); (2) both
-- tables get a CHECK constraint saying every row lies before the first day of the new
-- partitions, added NOT VALID (a catalog change) and then validated (a scan that lets reads and
-- writes go on); (3) one statement (a DO block, atomic) takes the exclusive locks, renames the
-- tables to probe_jobs_legacy / probe_runs_legacy, creates the partitioned probe_jobs and
-- probe_runs and attaches the legacy tables as their first partitions: the validated CHECK proves
-- the partition constraint, so ATTACH does not scan, and every index of the partitioned tables
-- matches one the legacy tables already have, so ATTACH builds none. Each step is safe to run
-- again: a migration stopped half-way is finished by running `probectl migrate` again.
--
-- Layer 4 of the invariant (docs/invariant.md) moves to probe_open_jobs: a unique index on a
-- partitioned table must include the partition key, so "one open job per server" can no longer be
-- a partial unique index on probe_jobs. probe_open_jobs holds one row per open job, unique by
-- server (the index keeps its name, probe_jobs_one_open_per_server); the claims write it in the
-- statement that inserts the job, and a trigger on probe_jobs keeps it for every other writer
-- (a job inserted open, a job finished or closed as abandoned).
--
-- The previous binary keeps working: it calls probe_claim, probe_claim_lease and probe_finish by
-- name (their bodies below write probe_open_jobs and the partition key), and its other statements
-- name neither the key nor the new table. A run its advance-first finish inserts has no
-- job_requested_at: it is stored in the default partition, as any row whose day has no partition.


-- The tables retention keeps (docs/retention.md): the setting, and every export made.
CREATE TABLE IF NOT EXISTS probe_retention (
    id             boolean     PRIMARY KEY DEFAULT true CHECK (id),
    -- a partition per day or per week (set before the partitions it is to shape are made)
    partition_unit text        NOT NULL DEFAULT 'day' CHECK (partition_unit IN ('day', 'week')),
    -- how long runs are kept; NULL: for ever (the default)
    keep           interval    CHECK (keep IS NULL OR keep >= interval '3 days'),
    updated_by     text,
    updated_at     timestamptz
);
INSERT INTO probe_retention DEFAULT VALUES ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS probe_run_exports (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_name   text        NOT NULL,
    -- the runs of the jobs requested before this time, and from this one (NULL: from the oldest)
    before      timestamptz NOT NULL,
    range_from  timestamptz,
    runs        bigint      NOT NULL CHECK (runs >= 0),
    first_at    timestamptz,
    last_at     timestamptz,
    -- the largest run id exported: a run stored later in a range is not in the archive
    max_run_id  bigint,
    sha256      text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    exported_by text        NOT NULL,
    exported_at timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_jobs_open() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM probe_open_jobs AS oj WHERE oj.job_id = OLD.id;
    ELSIF NEW.finished_at IS NULL AND (TG_OP = 'INSERT' OR OLD.finished_at IS NOT NULL) THEN
        -- A claim wrote the row already (same job); another open job of the server fails here.
        INSERT INTO probe_open_jobs (job_id, server_id, requested_at)
        VALUES (NEW.id, NEW.server_id, NEW.requested_at)
        ON CONFLICT (job_id) DO NOTHING;
    ELSIF NEW.finished_at IS NOT NULL AND TG_OP = 'UPDATE' AND OLD.finished_at IS NULL THEN
        DELETE FROM probe_open_jobs AS oj WHERE oj.job_id = NEW.id;
    END IF;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- (1) The partition key of probe_runs.
ALTER TABLE probe_runs ADD COLUMN IF NOT EXISTS job_requested_at timestamptz NOT NULL DEFAULT '-infinity';

-- +goose StatementBegin
-- The first day of the partitions, remembered so that a run of this migration stopped half-way
-- and run again uses the same one: on an empty database none (the legacy partitions hold nothing:
-- they end at -infinity, and every day, past ones too, gets its own partition), else two days
-- after the newest job (and at least two days ahead, so that no probe writing while the migration runs
-- reaches it before the tables are partitioned).
CREATE TABLE IF NOT EXISTS probe_partitions (
    table_name  text        PRIMARY KEY,
    parent      text        NOT NULL CHECK (parent IN ('probe_jobs', 'probe_runs')),
    range_from  timestamptz NOT NULL,
    range_to    timestamptz NOT NULL CHECK (range_to >= range_from),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- set by `runs prune`: when the partition was detached and dropped, and the export that held
    -- its runs (NULL when pruned with --without-export)
    dropped_at  timestamptz,
    export_id   bigint,
    -- the run ids a pruned runs partition held (runs show says where a pruned run went)
    min_run_id  bigint,
    max_run_id  bigint
);
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
DECLARE
    v_max   timestamptz;
    v_first timestamptz;
BEGIN
    IF EXISTS (SELECT 1 FROM probe_partitions WHERE table_name = 'probe_jobs_legacy') THEN
        RETURN;
    END IF;
    -- Anything in the directory that refers to the tables other than what 00001-00010 made would
    -- be left pointing at the legacy partition: refuse, loudly, rather than break it silently.
    IF EXISTS (SELECT 1 FROM pg_constraint AS c
                WHERE c.contype = 'f'
                  AND c.confrelid IN ('probe_jobs'::regclass, 'probe_runs'::regclass)
                  AND c.conname <> 'probe_runs_job_id_fkey') THEN
        RAISE EXCEPTION 'a foreign key refers to probe_jobs or probe_runs; 00017 cannot partition them'
              USING HINT = 'refer to runs and jobs by id without a foreign key (docs/retention.md)';
    END IF;
    SELECT max(requested_at) INTO v_max FROM probe_jobs;
    IF v_max IS NULL THEN
        v_first := '-infinity';
    ELSE
        v_first := greatest(date_trunc('day', v_max, 'UTC'), date_trunc('day', now(), 'UTC')) + interval '2 days';
    END IF;
    INSERT INTO probe_partitions (table_name, parent, range_from, range_to)
    VALUES ('probe_jobs_legacy', 'probe_jobs', '-infinity', v_first),
           ('probe_runs_legacy', 'probe_runs', '-infinity', v_first);
END
$migrate$;
-- +goose StatementEnd

-- (2) The CHECK constraints that let ATTACH skip its scan: added NOT VALID (no scan), then
-- validated (a scan under a lock that lets reads and writes go on).
-- +goose StatementBegin
DO $migrate$
DECLARE
    v_first timestamptz := (SELECT range_to FROM probe_partitions WHERE table_name = 'probe_jobs_legacy');
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'probe_jobs_legacy_range') THEN
        EXECUTE format('ALTER TABLE probe_jobs ADD CONSTRAINT probe_jobs_legacy_range CHECK (requested_at < %L) NOT VALID', v_first);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'probe_runs_legacy_range') THEN
        EXECUTE format('ALTER TABLE probe_runs ADD CONSTRAINT probe_runs_legacy_range CHECK (job_requested_at < %L) NOT VALID', v_first);
    END IF;
END
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
DECLARE
    v_table regclass;
BEGIN
    SELECT c.conrelid INTO v_table FROM pg_constraint AS c WHERE c.conname = 'probe_jobs_legacy_range' AND NOT c.convalidated;
    IF FOUND THEN
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT probe_jobs_legacy_range', v_table);
    END IF;
END
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
DECLARE
    v_table regclass;
BEGIN
    SELECT c.conrelid INTO v_table FROM pg_constraint AS c WHERE c.conname = 'probe_runs_legacy_range' AND NOT c.convalidated;
    IF FOUND THEN
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT probe_runs_legacy_range', v_table);
    END IF;
END
$migrate$;
-- +goose StatementEnd

-- (3) The exclusive step, one statement: every lock it takes is held only for catalog changes.
-- +goose StatementBegin
DO $migrate$
DECLARE
    v_first timestamptz := (SELECT range_to FROM probe_partitions WHERE table_name = 'probe_jobs_legacy');
    v_jobs  bigint;
    v_runs  bigint;
    v_trig  record;
    v_view  record;
BEGIN
    IF to_regclass('probe_jobs_legacy') IS NOT NULL THEN
        RETURN;
    END IF;
    -- Wait at most this long for the locks, rather than queue every probe behind a long reader.
    PERFORM set_config('lock_timeout', '10s', true);
    LOCK TABLE probe_jobs, probe_runs IN ACCESS EXCLUSIVE MODE;

    -- The ids go on from where the legacy tables' identity sequences are.
    v_jobs := nextval(pg_get_serial_sequence('probe_jobs', 'id'));
    v_runs := nextval(pg_get_serial_sequence('probe_runs', 'id'));

    -- Layer 4 moves to probe_open_jobs (the jobs open now, read through the old partial index).
    CREATE TABLE probe_open_jobs (
        job_id       bigint      PRIMARY KEY,
        server_id    bigint      NOT NULL,
        requested_at timestamptz NOT NULL
    );
    INSERT INTO probe_open_jobs (job_id, server_id, requested_at)
    SELECT j.id, j.server_id, j.requested_at FROM probe_jobs AS j WHERE j.finished_at IS NULL;
    DROP INDEX probe_jobs_one_open_per_server;
    CREATE UNIQUE INDEX probe_jobs_one_open_per_server ON probe_open_jobs (server_id);
    -- The claim reads the open jobs past their window.
    CREATE INDEX probe_open_jobs_requested_idx ON probe_open_jobs (requested_at);

    ALTER TABLE probe_jobs RENAME TO probe_jobs_legacy;
    ALTER TABLE probe_runs RENAME TO probe_runs_legacy;
    ALTER TABLE probe_jobs_legacy ALTER COLUMN id DROP IDENTITY;
    ALTER TABLE probe_runs_legacy ALTER COLUMN id DROP IDENTITY;

    -- The partitioned tables take the legacy tables' columns, defaults and CHECK constraints
    -- (named as there, as ATTACH requires), whatever migrations before this one added.
    CREATE TABLE probe_jobs (LIKE probe_jobs_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
        PARTITION BY RANGE (requested_at);
    ALTER TABLE probe_jobs DROP CONSTRAINT probe_jobs_legacy_range;
    CREATE TABLE probe_runs (LIKE probe_runs_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
        PARTITION BY RANGE (job_requested_at);
    ALTER TABLE probe_runs DROP CONSTRAINT probe_runs_legacy_range;
    -- A run inserted without its key (a previous binary's advance-first finish) is kept, in the
    -- default partition, rather than refused.
    ALTER TABLE probe_runs ALTER COLUMN job_requested_at DROP DEFAULT, ALTER COLUMN job_requested_at DROP NOT NULL;

    -- v_jobs and v_runs were drawn above and given to no row (the tables are locked): the new
    -- sequences start at them, so ids go on without a gap.
    EXECUTE format('CREATE SEQUENCE probe_jobs_id_seq START %s OWNED BY probe_jobs.id', v_jobs);
    EXECUTE format('CREATE SEQUENCE probe_runs_id_seq START %s OWNED BY probe_runs.id', v_runs);
    ALTER TABLE probe_jobs ALTER COLUMN id SET DEFAULT nextval('probe_jobs_id_seq');
    ALTER TABLE probe_runs ALTER COLUMN id SET DEFAULT nextval('probe_runs_id_seq');

    -- The indexes every partition has, each the same as a legacy table's (ATTACH adopts it).
    -- Unique keys (id, runs' job_id) and foreign keys are each partition's own: a run's job lies
    -- in the partition of the same range, so a run partition's foreign key names its job
    -- partition (probe_partitions_ensure).
    CREATE INDEX probe_jobs_server_requested_idx_p ON probe_jobs (server_id, requested_at);
    CREATE INDEX probe_jobs_requested_idx_p ON probe_jobs (requested_at);
    CREATE INDEX probe_jobs_round_idx_p ON probe_jobs (round_id);
    CREATE INDEX probe_runs_server_idx_p ON probe_runs (server_id, started_at);
    CREATE INDEX probe_runs_started_idx_p ON probe_runs (started_at, id);

    EXECUTE format('ALTER TABLE probe_jobs ATTACH PARTITION probe_jobs_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_first);
    EXECUTE format('ALTER TABLE probe_runs ATTACH PARTITION probe_runs_legacy FOR VALUES FROM (MINVALUE) TO (%L)', v_first);

    -- Triggers move to the partitioned table (each partition gets them), views follow it.
    FOR v_trig IN SELECT t.tgname, t.tgrelid::regclass AS rel, pg_get_triggerdef(t.oid) AS def
                    FROM pg_trigger AS t
                   WHERE t.tgrelid IN ('probe_jobs_legacy'::regclass, 'probe_runs_legacy'::regclass)
                     AND NOT t.tgisinternal AND t.tgparentid = 0 LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', v_trig.tgname, v_trig.rel);
        EXECUTE replace(replace(v_trig.def, 'probe_jobs_legacy', 'probe_jobs'), 'probe_runs_legacy', 'probe_runs');
    END LOOP;
    FOR v_view IN SELECT DISTINCT v.oid::regclass AS name, pg_get_viewdef(v.oid) AS def
                    FROM pg_depend AS d
                    JOIN pg_rewrite AS w ON w.oid = d.objid
                    JOIN pg_class AS v ON v.oid = w.ev_class
                   WHERE d.refobjid IN ('probe_jobs_legacy'::regclass, 'probe_runs_legacy'::regclass)
                     AND v.relkind = 'v' LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s AS %s', v_view.name,
                       replace(replace(v_view.def, 'probe_jobs_legacy', 'probe_jobs'), 'probe_runs_legacy', 'probe_runs'));
    END LOOP;

    -- Layer 4 for every writer other than the claims: a job inserted open takes its server's
    -- open-job row (a second open job for a server fails on the unique index), a job finished or
    -- closed gives it back.
    CREATE TRIGGER probe_jobs_open AFTER INSERT OR UPDATE OF finished_at OR DELETE ON probe_jobs
        FOR EACH ROW EXECUTE FUNCTION probe_jobs_open();

    -- The default partitions: a row whose day has no partition yet is stored, never refused;
    -- probe_partitions_ensure moves such rows into the partition it makes for their day.
    CREATE TABLE probe_jobs_default (LIKE probe_jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    ALTER TABLE probe_jobs_default ADD PRIMARY KEY (id),
        ADD FOREIGN KEY (server_id) REFERENCES servers (id),
        ADD FOREIGN KEY (round_id) REFERENCES probe_rounds (id);
    ALTER TABLE probe_jobs ATTACH PARTITION probe_jobs_default DEFAULT;
    CREATE TABLE probe_runs_default (LIKE probe_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    ALTER TABLE probe_runs_default ADD PRIMARY KEY (id), ADD UNIQUE (job_id),
        ADD FOREIGN KEY (server_id) REFERENCES servers (id);
    ALTER TABLE probe_runs ATTACH PARTITION probe_runs_default DEFAULT;
END
$migrate$;
-- +goose StatementEnd

-- Partitions are made ahead by maintenance (`probectl maintain`, the worker's daily job,
-- `migrate`): probe_partitions_ensure makes the jobs and runs partitions of every day (or week) from
-- p_from up to p_to that no partition covers yet, each a plain table made complete (keys, foreign
-- keys, a CHECK of its range) and then attached, which takes no lock that stops a finish. Rows that
-- were stored in a default partition because their day had no partition are moved into it first.
-- With p_dry_run it says what it would do and does nothing.
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
    v_unit  text := coalesce(p_unit, (SELECT r.partition_unit FROM probe_retention AS r), 'day');
    v_step  interval;
    v_lo    timestamptz;
    v_hi    timestamptz;
    v_cover timestamptz;
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
    -- One maintenance at a time (a second one waits, then finds the partitions made).
    IF NOT p_dry_run THEN
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
        SELECT min(p.range_from) INTO v_cover FROM probe_partitions AS p
         WHERE p.parent = 'probe_jobs' AND p.dropped_at IS NULL AND p.range_from > v_lo AND p.range_from < v_hi;
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

            INSERT INTO probe_partitions AS p (table_name, parent, range_from, range_to)
            VALUES (v_jobs, 'probe_jobs', v_lo, v_hi), (v_runs, 'probe_runs', v_lo, v_hi)
            ON CONFLICT ON CONSTRAINT probe_partitions_pkey DO UPDATE
               SET range_from = EXCLUDED.range_from, range_to = EXCLUDED.range_to,
                   created_at = now(), dropped_at = NULL, export_id = NULL;
        END IF;
        parent := 'probe_jobs'; table_name := v_jobs; range_from := v_lo; range_to := v_hi; moved_rows := v_moved;
        RETURN NEXT;
        parent := 'probe_runs'; table_name := v_runs; moved_rows := v_n;
        RETURN NEXT;
        v_lo := v_hi;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

-- The first partitions: today's (or from the first day after the legacy partition) and 7 days ahead.
SELECT count(*) FROM probe_partitions_ensure(
    greatest((SELECT range_to FROM probe_partitions WHERE table_name = 'probe_jobs_legacy'), date_trunc('day', now(), 'UTC')),
    date_trunc('day', now(), 'UTC') + interval '8 days');

-- Retention (`probectl runs prune`, docs/retention.md): the partitions wholly before p_before that
-- are still there, oldest first, a jobs and a runs partition per range, with about how many runs
-- it holds (the planner's estimate) and the newest export that covers them (its range holds the partition's, and no run of the
-- partition is newer than its newest run), NULL when none does.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partitions_prunable(p_before timestamptz)
RETURNS TABLE (
    range_from timestamptz,
    range_to   timestamptz,
    jobs_table text,
    runs_table text,
    runs       bigint,
    export_id  bigint
)
LANGUAGE plpgsql STABLE
AS $probe$
DECLARE
    v_p     record;
    v_max   bigint;
BEGIN
    FOR v_p IN SELECT j.range_from, j.range_to, j.table_name AS jobs, r.table_name AS runs
                 FROM probe_partitions AS j
                 JOIN probe_partitions AS r ON r.parent = 'probe_runs' AND r.range_from = j.range_from AND r.range_to = j.range_to
                WHERE j.parent = 'probe_jobs' AND j.dropped_at IS NULL AND r.dropped_at IS NULL
                  AND j.range_to <= p_before
                  AND j.range_to > '-infinity'   -- the empty legacy partition of a new database
                ORDER BY j.range_from LOOP
        range_from := v_p.range_from;
        range_to := v_p.range_to;
        jobs_table := v_p.jobs;
        runs_table := v_p.runs;
        IF to_regclass(v_p.runs) IS NULL THEN
            runs := 0;
            v_max := NULL;
        ELSE
            -- The planner's estimate, not a count: counting every partition took most of a
            -- prune's time (1.5 s of 2.9 s for 30 days of 83,000 runs).
            EXECUTE format('SELECT max(id) FROM %I', v_p.runs) INTO v_max;
            runs := greatest((SELECT c.reltuples FROM pg_class AS c WHERE c.oid = to_regclass(v_p.runs)), 0)::bigint;
        END IF;
        SELECT e.id INTO export_id FROM probe_run_exports AS e
         WHERE e.before >= v_p.range_to
           AND (e.range_from IS NULL OR e.range_from <= v_p.range_from)
           AND (v_max IS NULL OR e.max_run_id >= v_max)
         ORDER BY e.exported_at DESC, e.id DESC
         LIMIT 1;
        IF NOT FOUND THEN
            export_id := NULL;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$probe$;
-- +goose StatementEnd

-- Detach one partition (a no-op when it is detached already). PostgreSQL refuses DETACH
-- CONCURRENTLY while a default partition exists, so this takes the partitioned table's lock for
-- the catalog change alone, waiting at most p_lock_timeout for it (the caller retries): a finish
-- queued behind it waits no longer than that.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partition_detach(p_table text, p_lock_timeout interval)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_parent text := (SELECT p.parent FROM probe_partitions AS p WHERE p.table_name = p_table);
    v_min    bigint;
    v_max    bigint;
BEGIN
    IF v_parent IS NULL THEN
        RAISE EXCEPTION 'no partition %', p_table USING ERRCODE = 'undefined_table';
    END IF;
    IF to_regclass(p_table) IS NULL
       OR NOT EXISTS (SELECT 1 FROM pg_inherits AS i WHERE i.inhrelid = to_regclass(p_table)) THEN
        RETURN false;
    END IF;
    IF v_parent = 'probe_runs' THEN
        EXECUTE format('SELECT min(id), max(id) FROM %I', p_table) INTO v_min, v_max;
        UPDATE probe_partitions AS p SET min_run_id = v_min, max_run_id = v_max WHERE p.table_name = p_table;
    END IF;
    PERFORM set_config('lock_timeout', (extract(epoch FROM p_lock_timeout) * 1000)::bigint::text, true);
    EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', v_parent, p_table);
    RETURN true;
END
$probe$;
-- +goose StatementEnd

-- Drop a detached partition and record it pruned, with the export that holds its runs.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_partition_drop(p_table text, p_export_id bigint, p_lock_timeout interval)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $probe$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_inherits AS i WHERE i.inhrelid = to_regclass(p_table)) THEN
        RAISE EXCEPTION 'partition % is still attached', p_table USING ERRCODE = 'object_in_use';
    END IF;
    PERFORM set_config('lock_timeout', (extract(epoch FROM p_lock_timeout) * 1000)::bigint::text, true);
    EXECUTE format('DROP TABLE IF EXISTS %I', p_table);
    UPDATE probe_partitions AS p SET dropped_at = now(), export_id = p_export_id WHERE p.table_name = p_table;
END
$probe$;
-- +goose StatementEnd

-- The rollup trigger's function (00007), reading a run's job in its partition.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_rollup() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_outcome text := coalesce(NEW.result->>'outcome', '');
    v_day     date := (NEW.started_at AT TIME ZONE 'UTC')::date;
    v_fault   boolean;
    v_cert    timestamptz;
    v_secs    double precision := greatest(extract(epoch FROM NEW.finished_at - NEW.started_at), 0);
BEGIN
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT s.kind, v_outcome, (NEW.server_id % 16)::smallint, 1, v_secs,
           ARRAY(SELECT (v_secs <= b)::int::bigint FROM unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i) ORDER BY i)
      FROM servers AS s
     WHERE s.id = NEW.server_id
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + 1,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- A late run is inserted after its job was closed as abandoned; a run on time, before its job
    -- is finished. So the job's outcome here is 'abandoned' exactly for late runs.
    -- The job in its partition when the run carries its key (00017); a run without it (legacy,
    -- or a previous binary's advance-first finish) looks in every partition.
    IF NEW.job_requested_at IS NOT NULL AND NEW.job_requested_at <> '-infinity' THEN
        SELECT NEW.result->>'fault' IS NOT DISTINCT FROM 'probectl'
               OR NEW.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
               OR j.outcome IS NOT DISTINCT FROM 'abandoned'
          INTO v_fault
          FROM probe_jobs AS j
         WHERE j.id = NEW.job_id AND j.requested_at = NEW.job_requested_at;
    ELSE
        SELECT NEW.result->>'fault' IS NOT DISTINCT FROM 'probectl'
               OR NEW.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
               OR j.outcome IS NOT DISTINCT FROM 'abandoned'
          INTO v_fault
          FROM probe_jobs AS j
         WHERE j.id = NEW.job_id;
    END IF;
    IF v_fault THEN
        RETURN NULL;
    END IF;

    INSERT INTO server_run_days AS d (server_id, day, ok, counted)
    VALUES (NEW.server_id, v_day, (v_outcome = 'ok')::int, 1)
    ON CONFLICT (server_id, day) DO UPDATE
       SET ok = d.ok + EXCLUDED.ok, counted = d.counted + 1;

    v_cert := (jsonb_path_query_first(NEW.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz;
    INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
    VALUES (NEW.server_id, NEW.id, NEW.started_at, v_outcome,
            CASE WHEN v_outcome = 'ok' THEN NULL ELSE NEW.started_at END, v_cert)
    ON CONFLICT (server_id) DO UPDATE
       SET last_run_id    = EXCLUDED.last_run_id,
           last_run_at    = EXCLUDED.last_run_at,
           last_outcome   = EXCLUDED.last_outcome,
           failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                 ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
           cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
     -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
     WHERE r.last_run_at <= EXCLUDED.last_run_at;

    UPDATE server_rollups AS r
       SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                           FROM server_run_days AS d
                          WHERE d.server_id = NEW.server_id
                            AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
     WHERE r.server_id = NEW.server_id;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- The claims and the finish, as 00004 and 00009 made them, with layer 4 in probe_open_jobs and
-- each job and run read and written in its partition.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- The lock below serialises claims only under READ COMMITTED, where each statement takes a
    -- new snapshot. Under REPEATABLE READ or SERIALIZABLE the snapshot is taken by the first
    -- statement, before the lock, and a claim would read what the claim before it had not yet
    -- written: refuse rather than claim twice.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- Layer 1. The lock is taken in a statement of its own, before any statement that reads:
    -- under READ COMMITTED each statement takes a new snapshot, so the reads below see every
    -- claim committed before we got the lock. Taken inside the reading statement, the lock would
    -- come after that statement's snapshot and serialise nothing. 482956239461 is 0x70726f6265,
    -- "probe" in ASCII (queries.ClaimLockKey). There is no switch: tests that take the lock away
    -- install their own variant in their own database.
    PERFORM pg_advisory_xact_lock(482956239461);

    -- The time of the claim is read after the lock: a claim that waited is dated when it was made.
    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: a job still open after the in-flight window is closed as abandoned
    -- (its prober is presumed dead), so the server can be claimed again and the unique index
    -- never refuses a live claim.
    -- The open jobs are read from probe_open_jobs (migrations/00017_partitions.sql), which the
    -- trigger on probe_jobs keeps: the job rows are locked first (the trigger then removes their
    -- open-job rows), in the order a finish takes them, and each by its partition key.
    -- Planned only when there is a job to close: an UPDATE joined to the partitioned table is
    -- planned over every partition.
    IF EXISTS (SELECT 1 FROM probe_open_jobs AS oj WHERE oj.requested_at <= v_now - p_in_flight) THEN
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = 'abandoned',
               error       = 'still open after the in-flight window of ' || p_in_flight::text
          FROM probe_open_jobs AS oj
         WHERE oj.requested_at <= v_now - p_in_flight
           AND j.id = oj.job_id
           AND j.requested_at = oj.requested_at
           AND j.finished_at IS NULL;
    END IF;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                -- An explicit re-check: a maintainer claimed the server after its last job.
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job. OFFSET 0 keeps it a per-server probe of the
           -- one-open-job index (see 00002_claim.sql).
           AND NOT EXISTS (SELECT 1 FROM probe_open_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard: no job requested within the minimum spacing, unless this
           -- is an explicit re-check.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
    ), opened AS (
        -- Layer 4: one open job per server, held by the unique index on probe_open_jobs
        -- (server_id): probe_jobs is partitioned by requested_at and a unique index there could
        -- only be unique within a partition. The job's id is drawn here so that the open-job row
        -- and the job are written by this one statement; a conflicting claim (only possible with
        -- layer 1 taken away) skips the server instead of failing the claim. requested_at is read
        -- from the clock here, during this statement, and so after its snapshot (see
        -- 00002_claim.sql).
        INSERT INTO probe_open_jobs AS oj (job_id, server_id, requested_at)
        SELECT nextval('probe_jobs_id_seq'), pk.id, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING oj.job_id, oj.server_id, oj.requested_at
    ), inserted AS (
        INSERT INTO probe_jobs AS j (id, server_id, round_id, invocation, reason, requested_at)
        SELECT op.job_id, pk.id, p_round_id, p_invocation, pk.reason, op.requested_at
          FROM opened AS op
          JOIN picked AS pk ON pk.id = op.server_id
         ORDER BY pk.next_check_at, pk.id
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.next_check_at, i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_lease(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    transport             text,
    due_at                timestamptz,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- As in probe_claim: the lock serialises claims only under READ COMMITTED.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim_lease must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- probe_claim's key (queries.ClaimLockKey), shared, in a statement of its own before any read:
    -- a previous binary's claim, which takes it exclusively, never runs beside this one.
    PERFORM pg_advisory_xact_lock_shared(482956239461);

    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: jobs past the in-flight window are closed as abandoned. Their servers'
    -- leases end with them: next_check_at = requested_at + window <= now, so they are due again.
    -- The open jobs are read from probe_open_jobs (migrations/00017_partitions.sql), which the
    -- trigger on probe_jobs keeps: the job rows are locked first (the trigger then removes their
    -- open-job rows), in the order a finish takes them, and each by its partition key.
    -- Planned only when there is a job to close: an UPDATE joined to the partitioned table is
    -- planned over every partition.
    IF EXISTS (SELECT 1 FROM probe_open_jobs AS oj WHERE oj.requested_at <= v_now - p_in_flight) THEN
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = 'abandoned',
               error       = 'still open after the in-flight window of ' || p_in_flight::text
          FROM probe_open_jobs AS oj
         WHERE oj.requested_at <= v_now - p_in_flight
           AND j.id = oj.job_id
           AND j.requested_at = oj.requested_at
           AND j.finished_at IS NULL;
    END IF;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job (a previous binary's claim leaves its server due).
           AND NOT EXISTS (SELECT 1 FROM probe_open_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
         -- Layer 1: a row another claim holds is skipped; one it leased since this statement's
         -- snapshot is re-read when locked, and no longer passes next_check_at <= v_now.
         FOR UPDATE OF s SKIP LOCKED
    ), opened AS (
        -- Layer 4: one open job per server, held by the unique index on probe_open_jobs
        -- (server_id): probe_jobs is partitioned by requested_at and a unique index there could
        -- only be unique within a partition. The job's id is drawn here so that the open-job row
        -- and the job are written by this one statement; a conflicting claim (only possible with
        -- layer 1 taken away) skips the server instead of failing the claim. requested_at is read
        -- from the clock here, during this statement, and so after its snapshot (see
        -- 00002_claim.sql).
        INSERT INTO probe_open_jobs AS oj (job_id, server_id, requested_at)
        SELECT nextval('probe_jobs_id_seq'), pk.id, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING oj.job_id, oj.server_id, oj.requested_at
    ), inserted AS (
        INSERT INTO probe_jobs AS j (id, server_id, round_id, invocation, reason, requested_at)
        SELECT op.job_id, pk.id, p_round_id, p_invocation, pk.reason, op.requested_at
          FROM opened AS op
          JOIN picked AS pk ON pk.id = op.server_id
         ORDER BY pk.next_check_at, pk.id
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    ), leased AS (
        -- The lease: the server leaves the due range until its job's window ends.
        UPDATE servers AS s
           SET next_check_at = i.requested_at + p_in_flight
          FROM inserted AS i
         WHERE s.id = i.server_id
        RETURNING s.id, s.next_check_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.transport, pk.next_check_at, l.next_check_at,
           i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
      JOIN leased AS l ON l.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish(
    p_job_id                bigint,
    p_claimed_next_check_at timestamptz,
    p_outcome               text,
    p_error                 text,
    p_started_at            timestamptz,
    p_check_finished_at     timestamptz,
    p_requests              integer,
    p_result                jsonb,
    p_envelope              jsonb,
    p_now                   timestamptz DEFAULT NULL
) RETURNS TABLE (
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_server bigint;
    v_open   boolean;
    v_req    timestamptz;
BEGIN
    -- The job's partition key (its requested_at), from the open job if it is open: the job is then
    -- read in its own partition only (migrations/00017_partitions.sql). A job no longer open (a
    -- late finish, a replay) is looked up in every partition.
    SELECT oj.requested_at INTO v_req FROM probe_open_jobs AS oj WHERE oj.job_id = p_job_id;

    -- The job's row is locked: a claim closing it as abandoned waits for this finish, or this
    -- finish sees it closed.
    IF v_req IS NOT NULL THEN
        SELECT j.server_id, j.finished_at IS NULL, j.requested_at INTO v_server, v_open, v_req
          FROM probe_jobs AS j WHERE j.id = p_job_id AND j.requested_at = v_req
           FOR UPDATE;
    END IF;
    IF v_server IS NULL THEN
        SELECT j.server_id, j.finished_at IS NULL, j.requested_at INTO v_server, v_open, v_req
          FROM probe_jobs AS j WHERE j.id = p_job_id
           FOR UPDATE;
    END IF;
    IF v_server IS NULL THEN
        RAISE EXCEPTION 'probe_finish: no job %', p_job_id USING ERRCODE = 'no_data_found';
    END IF;

    -- A replay (a spool played back, a reply lost after the commit): the run is stored already.
    -- Store nothing twice, change nothing, and say so with the stored run's id.
    -- A run is stored in its job's partition (job_requested_at); runs stored before 00017 are keyed
    -- -infinity and a previous binary's advance-first finish stores NULL (the default partition).
    SELECT r.id INTO run_id FROM probe_runs AS r
     WHERE r.job_id = p_job_id
       AND (r.job_requested_at = v_req OR r.job_requested_at = '-infinity' OR r.job_requested_at IS NULL);
    IF FOUND THEN
        advanced := false;
        job_finished := false;
        finished_at := v_now;
        RETURN NEXT;
        RETURN;
    END IF;

    -- (a) Advance, only while the job is still open (a late finish has lost its lease: another
    -- round may have claimed the server since, and only its finish may move the server on), and
    -- as a compare-and-set on the next_check_at that was claimed.
    advanced := false;
    IF v_open THEN
        UPDATE servers AS s
           SET next_check_at = v_now + s.check_interval
         WHERE s.id = v_server
           AND s.next_check_at = p_claimed_next_check_at
           AND s.status = 'active';
        advanced := FOUND;
    END IF;

    -- (b) The run: the observation was made, so it is stored whatever the guards say; late when
    -- the job was closed meanwhile (at probectl's fault, not the server's).
    INSERT INTO probe_runs AS r (job_id, job_requested_at, server_id, started_at, finished_at, requests, result, envelope, late)
    VALUES (p_job_id, v_req, v_server, p_started_at, p_check_finished_at, p_requests, p_result, p_envelope, NOT v_open)
    RETURNING r.id INTO run_id;

    -- (c) Finish the job only if it is still open (not closed as abandoned meanwhile).
    job_finished := false;
    IF v_open THEN
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = p_outcome,
               error       = nullif(p_error, '')
         WHERE j.id = p_job_id
           AND j.requested_at = v_req;
        job_finished := true;
    END IF;

    finished_at := v_now;
    RETURN NEXT;
END
$probe$;
-- +goose StatementEnd

-- run_facts (00007) joined a run to its job by id alone: on the partitioned probe_jobs no partition
-- can be pruned for that, and the planner hashes every job of every partition to read one
-- server's 30 days (servers show, /servers/SLUG: 110 ms and 383 ms at 100,000 runs over 30 daily
-- partitions, against 4 ms and 12 ms unpartitioned). The job is now found in its partition by the
-- run's key (one index probe, pruned at run time); a run without the key (the legacy partition's
-- '-infinity', a previous binary's NULL) looks the job up by id as before. Same columns, same rows.
CREATE OR REPLACE VIEW run_facts AS
SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
       coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
       coalesce(r.result->>'summary', '') AS summary,
       nullif(r.result->>'error', '') AS error,
       r.requests, r.started_at, r.finished_at,
       r.envelope->'signatures'->0->>'keyid' AS key_id,
       (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
        OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
        OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault
  FROM probe_runs AS r
  JOIN LATERAL (
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND k.requested_at = r.job_requested_at
        UNION ALL
        SELECT k.round_id, k.outcome FROM probe_jobs AS k
         WHERE k.id = r.job_id AND (r.job_requested_at IS NULL OR r.job_requested_at = '-infinity')
       ) AS j ON true
  JOIN servers AS s ON s.id = r.server_id;

-- +goose Down
-- Back to one table each: the rows stored since the upgrade (every partition but the legacy one)
-- are copied into the legacy tables, which become probe_jobs and probe_runs again. The copy is the
-- long part: roll back soon, or prune first. Runs pruned stay pruned (their archives hold them).
-- +goose StatementBegin
DO $migrate$
DECLARE
    v_p record;
BEGIN
    LOCK TABLE probe_jobs, probe_runs IN ACCESS EXCLUSIVE MODE;
    FOR v_p IN SELECT i.inhrelid::regclass AS part, i.inhparent::regclass AS parent
                 FROM pg_inherits AS i
                WHERE i.inhparent IN ('probe_jobs'::regclass, 'probe_runs'::regclass)
                ORDER BY i.inhparent = 'probe_jobs'::regclass LOOP   -- runs first (their keys name jobs)
        EXECUTE format('ALTER TABLE %s DETACH PARTITION %s', v_p.parent, v_p.part);
    END LOOP;
    DROP TRIGGER IF EXISTS probe_jobs_open ON probe_jobs_legacy;
    ALTER TABLE probe_runs_legacy DROP CONSTRAINT probe_runs_legacy_range;
    ALTER TABLE probe_jobs_legacy DROP CONSTRAINT probe_jobs_legacy_range;
    FOR v_p IN SELECT p.table_name FROM probe_partitions AS p
                WHERE p.parent = 'probe_jobs' AND p.dropped_at IS NULL AND p.table_name <> 'probe_jobs_legacy'
                UNION ALL SELECT 'probe_jobs_default' ORDER BY 1 LOOP
        EXECUTE format('INSERT INTO probe_jobs_legacy SELECT * FROM %I', v_p.table_name);
    END LOOP;
    FOR v_p IN SELECT p.table_name FROM probe_partitions AS p
                WHERE p.parent = 'probe_runs' AND p.dropped_at IS NULL AND p.table_name <> 'probe_runs_legacy'
                UNION ALL SELECT 'probe_runs_default' ORDER BY 1 LOOP
        EXECUTE format('INSERT INTO probe_runs_legacy SELECT * FROM %I', v_p.table_name);
        EXECUTE format('DROP TABLE %I', v_p.table_name);
    END LOOP;
    FOR v_p IN SELECT p.table_name FROM probe_partitions AS p
                WHERE p.parent = 'probe_jobs' AND p.dropped_at IS NULL AND p.table_name <> 'probe_jobs_legacy'
                UNION ALL SELECT 'probe_jobs_default' LOOP
        EXECUTE format('DROP TABLE %I', v_p.table_name);
    END LOOP;
    -- The views and triggers go back with the tables.
    ALTER TABLE probe_jobs RENAME TO probe_jobs_partitioned;
    ALTER TABLE probe_runs RENAME TO probe_runs_partitioned;
    ALTER TABLE probe_jobs_legacy RENAME TO probe_jobs;
    ALTER TABLE probe_runs_legacy RENAME TO probe_runs;
    CREATE OR REPLACE VIEW run_facts AS
    SELECT r.id, r.job_id, j.round_id, r.server_id, s.slug AS server, s.kind,
           coalesce(r.result->>'outcome', j.outcome, '') AS outcome,
           coalesce(r.result->>'summary', '') AS summary,
           nullif(r.result->>'error', '') AS error,
           r.requests, r.started_at, r.finished_at,
           r.envelope->'signatures'->0->>'keyid' AS key_id,
           (r.result->>'fault' IS NOT DISTINCT FROM 'probectl'
            OR r.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
            OR j.outcome IS NOT DISTINCT FROM 'abandoned') AS probectl_fault
      FROM probe_runs AS r
      JOIN probe_jobs AS j ON j.id = r.job_id
      JOIN servers AS s ON s.id = r.server_id;
    DROP TABLE probe_runs_partitioned, probe_jobs_partitioned;
    ALTER TABLE probe_runs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
    ALTER TABLE probe_jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
    PERFORM setval(pg_get_serial_sequence('probe_jobs', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM probe_jobs), false);
    PERFORM setval(pg_get_serial_sequence('probe_runs', 'id'), (SELECT coalesce(max(id), 0) + 1 FROM probe_runs), false);
    DROP TRIGGER IF EXISTS probe_runs_rollup ON probe_runs;
    CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs FOR EACH ROW EXECUTE FUNCTION probe_runs_rollup();
    DROP INDEX probe_jobs_one_open_per_server;
    CREATE UNIQUE INDEX probe_jobs_one_open_per_server ON probe_jobs (server_id) WHERE finished_at IS NULL;
    ALTER TABLE probe_runs DROP COLUMN job_requested_at;
    DROP TABLE probe_open_jobs, probe_run_exports, probe_retention, probe_partitions;
    DROP FUNCTION probe_partitions_ensure(timestamptz, timestamptz, text, boolean);
    DROP FUNCTION probe_partitions_prunable(timestamptz);
    DROP FUNCTION probe_partition_detach(text, interval);
    DROP FUNCTION probe_partition_drop(text, bigint, interval);
    DROP FUNCTION probe_jobs_open();
END
$migrate$;
-- +goose StatementEnd

-- The claims and the finish as 00004 and 00009 made them.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_runs_rollup() RETURNS trigger
LANGUAGE plpgsql
AS $probe$
DECLARE
    v_outcome text := coalesce(NEW.result->>'outcome', '');
    v_day     date := (NEW.started_at AT TIME ZONE 'UTC')::date;
    v_fault   boolean;
    v_cert    timestamptz;
    v_secs    double precision := greatest(extract(epoch FROM NEW.finished_at - NEW.started_at), 0);
BEGIN
    INSERT INTO run_totals AS t (kind, outcome, shard, runs, seconds_sum, buckets)
    SELECT s.kind, v_outcome, (NEW.server_id % 16)::smallint, 1, v_secs,
           ARRAY(SELECT (v_secs <= b)::int::bigint FROM unnest(run_totals_bounds()) WITH ORDINALITY AS u(b, i) ORDER BY i)
      FROM servers AS s
     WHERE s.id = NEW.server_id
    ON CONFLICT (kind, outcome, shard) DO UPDATE
       SET runs        = t.runs + 1,
           seconds_sum = t.seconds_sum + EXCLUDED.seconds_sum,
           buckets     = ARRAY(SELECT a + b FROM unnest(t.buckets, EXCLUDED.buckets) WITH ORDINALITY AS u(a, b, i) ORDER BY i);

    -- A late run is inserted after its job was closed as abandoned; a run on time, before its job
    -- is finished. So the job's outcome here is 'abandoned' exactly for late runs.
    SELECT NEW.result->>'fault' IS NOT DISTINCT FROM 'probectl'
           OR NEW.result->>'summary' IS NOT DISTINCT FROM 'interrupted'
           OR j.outcome IS NOT DISTINCT FROM 'abandoned'
      INTO v_fault
      FROM probe_jobs AS j
     WHERE j.id = NEW.job_id;
    IF v_fault THEN
        RETURN NULL;
    END IF;

    INSERT INTO server_run_days AS d (server_id, day, ok, counted)
    VALUES (NEW.server_id, v_day, (v_outcome = 'ok')::int, 1)
    ON CONFLICT (server_id, day) DO UPDATE
       SET ok = d.ok + EXCLUDED.ok, counted = d.counted + 1;

    v_cert := (jsonb_path_query_first(NEW.result, '$.requests[*].tls.cert_not_after') #>> '{}')::timestamptz;
    INSERT INTO server_rollups AS r (server_id, last_run_id, last_run_at, last_outcome, failing_since, cert_not_after)
    VALUES (NEW.server_id, NEW.id, NEW.started_at, v_outcome,
            CASE WHEN v_outcome = 'ok' THEN NULL ELSE NEW.started_at END, v_cert)
    ON CONFLICT (server_id) DO UPDATE
       SET last_run_id    = EXCLUDED.last_run_id,
           last_run_at    = EXCLUDED.last_run_at,
           last_outcome   = EXCLUDED.last_outcome,
           failing_since  = CASE WHEN EXCLUDED.last_outcome = 'ok' THEN NULL
                                 ELSE coalesce(r.failing_since, EXCLUDED.last_run_at) END,
           cert_not_after = coalesce(EXCLUDED.cert_not_after, r.cert_not_after)
     -- a run stored out of order (a replayed spool) counts in its day but does not replace a newer one
     WHERE r.last_run_at <= EXCLUDED.last_run_at;

    UPDATE server_rollups AS r
       SET uptime_30d = (SELECT sum(d.ok)::float8 / nullif(sum(d.counted), 0)
                           FROM server_run_days AS d
                          WHERE d.server_id = NEW.server_id
                            AND d.day > (r.last_run_at AT TIME ZONE 'UTC')::date - 30)
     WHERE r.server_id = NEW.server_id;
    RETURN NULL;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- The lock below serialises claims only under READ COMMITTED, where each statement takes a
    -- new snapshot. Under REPEATABLE READ or SERIALIZABLE the snapshot is taken by the first
    -- statement, before the lock, and a claim would read what the claim before it had not yet
    -- written: refuse rather than claim twice.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- Layer 1. The lock is taken in a statement of its own, before any statement that reads:
    -- under READ COMMITTED each statement takes a new snapshot, so the reads below see every
    -- claim committed before we got the lock. Taken inside the reading statement, the lock would
    -- come after that statement's snapshot and serialise nothing. 482956239461 is 0x70726f6265,
    -- "probe" in ASCII (queries.ClaimLockKey). There is no switch: tests that take the lock away
    -- install their own variant in their own database.
    PERFORM pg_advisory_xact_lock(482956239461);

    -- The time of the claim is read after the lock: a claim that waited is dated when it was made.
    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: a job still open after the in-flight window is closed as abandoned
    -- (its prober is presumed dead), so the server can be claimed again and the unique index
    -- never refuses a live claim.
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
     WHERE j.finished_at IS NULL
       AND j.requested_at <= v_now - p_in_flight;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                -- An explicit re-check: a maintainer claimed the server after its last job.
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job. OFFSET 0 keeps it a per-server probe of the
           -- one-open-job index (see 00002_claim.sql).
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.finished_at IS NULL
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard: no job requested within the minimum spacing, unless this
           -- is an explicit re-check.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
    ), inserted AS (
        -- Layer 4: the unique index allows one open job per server; a conflicting claim (only
        -- possible with layer 1 taken away) skips the server instead of failing the claim.
        -- requested_at is read from the clock here, during this statement, and so after its
        -- snapshot (see 00002_claim.sql).
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, reason, requested_at)
        SELECT pk.id, p_round_id, p_invocation, pk.reason, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.next_check_at, i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_claim_lease(
    p_round_id    bigint,
    p_invocation  integer,
    p_limit       integer,
    p_min_spacing interval    DEFAULT interval '10 minutes',
    p_in_flight   interval    DEFAULT interval '15 minutes',
    p_now         timestamptz DEFAULT NULL
) RETURNS TABLE (
    job_id                bigint,
    server_id             bigint,
    slug                  text,
    endpoint_url          text,
    kind                  text,
    transport             text,
    due_at                timestamptz,
    claimed_next_check_at timestamptz,
    reason                text,
    requested_at          timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now timestamptz;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RETURN;
    END IF;

    -- As in probe_claim: the lock serialises claims only under READ COMMITTED.
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'probe_claim_lease must run under READ COMMITTED, not %', current_setting('transaction_isolation')
              USING ERRCODE = 'invalid_transaction_state',
                    HINT = 'unset default_transaction_isolation for the probectl role or database';
    END IF;

    -- probe_claim's key (queries.ClaimLockKey), shared, in a statement of its own before any read:
    -- a previous binary's claim, which takes it exclusively, never runs beside this one.
    PERFORM pg_advisory_xact_lock_shared(482956239461);

    v_now := coalesce(p_now, clock_timestamp());

    -- Layer 4's companion: jobs past the in-flight window are closed as abandoned. Their servers'
    -- leases end with them: next_check_at = requested_at + window <= now, so they are due again.
    UPDATE probe_jobs AS j
       SET finished_at = v_now,
           outcome     = 'abandoned',
           error       = 'still open after the in-flight window of ' || p_in_flight::text
     WHERE j.finished_at IS NULL
       AND j.requested_at <= v_now - p_in_flight;

    RETURN QUERY
    WITH picked AS (
        SELECT s.id, s.slug, s.endpoint_url, s.kind, s.transport, s.next_check_at, r.reason
          FROM servers AS s
         CROSS JOIN LATERAL (
                SELECT CASE WHEN s.maintainer_claimed_at IS NOT NULL
                             AND NOT EXISTS (SELECT 1 FROM probe_jobs AS m
                                              WHERE m.server_id = s.id
                                                AND m.requested_at >= s.maintainer_claimed_at)
                            THEN 'maintainer_claim' ELSE 'scheduled' END AS reason
               ) AS r
         WHERE s.status = 'active'
           AND s.next_check_at <= v_now
           -- The in-flight guard: no open job (a previous binary's claim leaves its server due).
           AND NOT EXISTS (SELECT 1 FROM probe_jobs AS o
                            WHERE o.server_id = s.id
                              AND o.finished_at IS NULL
                              AND o.requested_at > v_now - p_in_flight
                           OFFSET 0)
           -- Layer 3, the spacing guard.
           AND (r.reason = 'maintainer_claim'
                OR NOT EXISTS (SELECT 1 FROM probe_jobs AS p
                                WHERE p.server_id = s.id
                                  AND p.requested_at > v_now - p_min_spacing))
         ORDER BY s.next_check_at, s.id
         LIMIT p_limit
         -- Layer 1: a row another claim holds is skipped; one it leased since this statement's
         -- snapshot is re-read when locked, and no longer passes next_check_at <= v_now.
         FOR UPDATE OF s SKIP LOCKED
    ), inserted AS (
        -- Layer 4: one open job per server; requested_at read from the clock during this
        -- statement, after its snapshot (see 00002_claim.sql).
        INSERT INTO probe_jobs AS j (server_id, round_id, invocation, reason, requested_at)
        SELECT pk.id, p_round_id, p_invocation, pk.reason, coalesce(p_now, clock_timestamp())
          FROM picked AS pk
         ORDER BY pk.next_check_at, pk.id
        ON CONFLICT DO NOTHING
        RETURNING j.id, j.server_id, j.reason, j.requested_at
    ), leased AS (
        -- The lease: the server leaves the due range until its job's window ends.
        UPDATE servers AS s
           SET next_check_at = i.requested_at + p_in_flight
          FROM inserted AS i
         WHERE s.id = i.server_id
        RETURNING s.id, s.next_check_at
    )
    SELECT i.id, pk.id, pk.slug, pk.endpoint_url, pk.kind, pk.transport, pk.next_check_at, l.next_check_at,
           i.reason, i.requested_at
      FROM inserted AS i
      JOIN picked AS pk ON pk.id = i.server_id
      JOIN leased AS l ON l.id = i.server_id
     ORDER BY pk.next_check_at, pk.id;
END
$probe$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION probe_finish(
    p_job_id                bigint,
    p_claimed_next_check_at timestamptz,
    p_outcome               text,
    p_error                 text,
    p_started_at            timestamptz,
    p_check_finished_at     timestamptz,
    p_requests              integer,
    p_result                jsonb,
    p_envelope              jsonb,
    p_now                   timestamptz DEFAULT NULL
) RETURNS TABLE (
    run_id       bigint,
    advanced     boolean,
    job_finished boolean,
    finished_at  timestamptz
)
LANGUAGE plpgsql VOLATILE
AS $probe$
DECLARE
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_server bigint;
    v_open   boolean;
BEGIN
    -- The job's row is locked: a claim closing it as abandoned waits for this finish, or this
    -- finish sees it closed.
    SELECT j.server_id, j.finished_at IS NULL INTO v_server, v_open
      FROM probe_jobs AS j WHERE j.id = p_job_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'probe_finish: no job %', p_job_id USING ERRCODE = 'no_data_found';
    END IF;

    -- A replay (a spool played back, a reply lost after the commit): the run is stored already.
    -- Store nothing twice, change nothing, and say so with the stored run's id.
    SELECT r.id INTO run_id FROM probe_runs AS r WHERE r.job_id = p_job_id;
    IF FOUND THEN
        advanced := false;
        job_finished := false;
        finished_at := v_now;
        RETURN NEXT;
        RETURN;
    END IF;

    -- (a) Advance, only while the job is still open (a late finish has lost its lease: another
    -- round may have claimed the server since, and only its finish may move the server on), and
    -- as a compare-and-set on the next_check_at that was claimed.
    advanced := false;
    IF v_open THEN
        UPDATE servers AS s
           SET next_check_at = v_now + s.check_interval
         WHERE s.id = v_server
           AND s.next_check_at = p_claimed_next_check_at
           AND s.status = 'active';
        advanced := FOUND;
    END IF;

    -- (b) The run: the observation was made, so it is stored whatever the guards say; late when
    -- the job was closed meanwhile (at probectl's fault, not the server's).
    INSERT INTO probe_runs AS r (job_id, server_id, started_at, finished_at, requests, result, envelope, late)
    VALUES (p_job_id, v_server, p_started_at, p_check_finished_at, p_requests, p_result, p_envelope, NOT v_open)
    RETURNING r.id INTO run_id;

    -- (c) Finish the job only if it is still open (not closed as abandoned meanwhile).
    job_finished := false;
    IF v_open THEN
        UPDATE probe_jobs AS j
           SET finished_at = v_now,
               outcome     = p_outcome,
               error       = nullif(p_error, '')
         WHERE j.id = p_job_id;
        job_finished := true;
    END IF;

    finished_at := v_now;
    RETURN NEXT;
END
$probe$;
-- +goose StatementEnd

