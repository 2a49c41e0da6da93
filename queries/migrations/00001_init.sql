-- +goose Up
-- The directory, the claims (jobs), the observations (runs), the releases and the keys that sign
-- runs. Names are fixed: release managers query these tables by hand.

CREATE TABLE servers (
    id                    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug                  text        NOT NULL UNIQUE,
    endpoint_url          text        NOT NULL,
    kind                  text        NOT NULL CHECK (kind IN ('mcp', 'http')),
    plan                  text        NOT NULL CHECK (plan IN ('standard', 'frequent')),
    check_interval        interval    NOT NULL CHECK (check_interval > interval '0'),
    status                text        NOT NULL DEFAULT 'active'
                                      CHECK (status IN ('active', 'paused', 'delisted')),
    maintainer_claimed_at timestamptz,
    next_check_at         timestamptz NOT NULL DEFAULT now(),
    created_at            timestamptz NOT NULL DEFAULT now()
);

-- The claim reads due, active servers in next_check_at order.
CREATE INDEX servers_due_idx ON servers (next_check_at) WHERE status = 'active';

CREATE TABLE releases (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    version        text        NOT NULL,
    fanout         integer     NOT NULL CHECK (fanout >= 0),
    claim_limit    integer     NOT NULL CHECK (claim_limit > 0),
    concurrency    integer     NOT NULL CHECK (concurrency > 0),
    min_spacing    interval    NOT NULL CHECK (min_spacing >= interval '0'),
    finish_mode    text        NOT NULL CHECK (finish_mode IN ('tx', 'advance-first')),
    ways_back      text[]      NOT NULL DEFAULT '{}'
                               CHECK (ways_back <@ ARRAY['previous', 'fanout-off']::text[]),
    note           text        NOT NULL DEFAULT '',
    deployed_at    timestamptz NOT NULL DEFAULT now(),
    deployed_by    text        NOT NULL,
    active         boolean     NOT NULL DEFAULT false,
    rolled_back_at timestamptz,
    rolled_back_by text,
    rollback_reason text
);

-- At most one active release.
CREATE UNIQUE INDEX releases_one_active ON releases ((true)) WHERE active;

CREATE TABLE probe_rounds (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    trigger     text        NOT NULL CHECK (trigger IN ('cron', 'manual')),
    release_id  bigint      REFERENCES releases (id),
    version     text        NOT NULL,
    fanout      integer     NOT NULL CHECK (fanout >= 0),
    claim_limit integer     NOT NULL CHECK (claim_limit > 0),
    concurrency integer     NOT NULL CHECK (concurrency > 0),
    settings    jsonb       NOT NULL DEFAULT '{}',
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);

CREATE INDEX probe_rounds_started_idx ON probe_rounds (started_at);

CREATE TABLE probe_jobs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    server_id    bigint      NOT NULL REFERENCES servers (id),
    round_id     bigint      REFERENCES probe_rounds (id),
    invocation   integer,
    reason       text        NOT NULL DEFAULT 'scheduled'
                             CHECK (reason IN ('scheduled', 'maintainer_claim', 'manual')),
    requested_at timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    outcome      text        CHECK (outcome IN ('ok', 'failed', 'error', 'abandoned')),
    error        text,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

-- Audits and the spacing guard walk a server's jobs in request order.
CREATE INDEX probe_jobs_server_requested_idx ON probe_jobs (server_id, requested_at);
CREATE INDEX probe_jobs_requested_idx ON probe_jobs (requested_at);
CREATE INDEX probe_jobs_round_idx ON probe_jobs (round_id);

-- Layer 4 of the invariant: the database itself refuses a second open job for a server.
CREATE UNIQUE INDEX probe_jobs_one_open_per_server ON probe_jobs (server_id) WHERE finished_at IS NULL;

CREATE TABLE signing_keys (
    key_id      text        PRIMARY KEY,
    algorithm   text        NOT NULL DEFAULT 'ed25519' CHECK (algorithm = 'ed25519'),
    public_key  bytea       NOT NULL CHECK (length(public_key) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);

CREATE TABLE probe_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint      NOT NULL UNIQUE REFERENCES probe_jobs (id),
    server_id   bigint      NOT NULL REFERENCES servers (id),
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    requests    integer     NOT NULL CHECK (requests BETWEEN 0 AND 8),
    result      jsonb       NOT NULL DEFAULT '{}',
    envelope    jsonb
);

CREATE INDEX probe_runs_server_idx ON probe_runs (server_id, started_at);

-- +goose Down
DROP TABLE probe_runs;
DROP TABLE signing_keys;
DROP TABLE probe_jobs;
DROP TABLE probe_rounds;
DROP TABLE releases;
DROP TABLE servers;
