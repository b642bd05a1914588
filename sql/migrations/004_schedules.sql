-- cbatch job repository, schema version 4: schedules.
--
-- A schedule fires a job on a cron expression in a time zone. Every scheduler
-- node reads the same rows, and a fire instant becomes a run only by claiming
-- it: one row of batch_schedule_firing per (schedule, fire instant), under a
-- unique key, inserted in one transaction that holds the schedule's row lock.
-- Times are the database's (clock_timestamp()), never a node's clock; the
-- next fire instant is computed from the claimed one. Every node writes what
-- it did with each instant it considered to batch_schedule_event, which is
-- what `schedule history` shows.
--
-- Time zone rules come from the database server's time zone data
-- (batch_tz_segment), so that nodes with different host tzdata agree.

CREATE TABLE batch_schedule (
    schedule_id     bigserial PRIMARY KEY,
    schedule_name   varchar(100)  NOT NULL UNIQUE,
    cron_expression varchar(1024) NOT NULL,
    time_zone       varchar(100)  NOT NULL,
    job_name        varchar(100)  NOT NULL,
    -- Parameter templates, in command-line syntax: a JSON array of strings.
    parameters      jsonb         NOT NULL DEFAULT '[]',
    misfire_policy  varchar(10)   NOT NULL DEFAULT 'RUN_ONCE',
    -- How late a fire instant may be taken and still count as on time.
    misfire_grace_seconds int     NOT NULL DEFAULT 60,
    paused          boolean       NOT NULL DEFAULT false,
    -- The first fire instant nobody has claimed yet: every instant before it
    -- has a firing row (run, or recorded as missed).
    next_fire_time  timestamptz,
    last_fire_time  timestamptz,
    -- Bumped by every change a node must notice (pause, resume, edit).
    version         bigint        NOT NULL DEFAULT 0,
    created_at      timestamptz   NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz   NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_schedule_misfire_ck CHECK (misfire_policy IN ('RUN_ONCE', 'SKIP')),
    CONSTRAINT batch_schedule_grace_ck CHECK (misfire_grace_seconds BETWEEN 1 AND 86400),
    CONSTRAINT batch_schedule_parameters_ck CHECK (jsonb_typeof(parameters) = 'array')
);

-- A running scheduler process. Its heartbeat tells the others whether its
-- open firings are still looked after.
CREATE TABLE batch_scheduler_node (
    node_id        varchar(200) PRIMARY KEY,  -- the process identity (host:pid:...)
    host           varchar(255) NOT NULL,
    pid            int          NOT NULL,
    started_at     timestamptz  NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at   timestamptz  NOT NULL DEFAULT clock_timestamp(),
    lease_seconds  double precision NOT NULL,
    stopped_at     timestamptz
);

-- One row per claimed fire instant: the exactly-once key. kind SCHEDULED is
-- an instant taken on time; MISFIRE_RUN and MISFIRE_SKIP stand for the run of
-- instants from fire_time to missed_until that were missed while no scheduler
-- ran (run once now, with parameters from param_time, or recorded only).
CREATE TABLE batch_schedule_firing (
    firing_id        bigserial PRIMARY KEY,
    schedule_id      bigint       NOT NULL REFERENCES batch_schedule ON DELETE CASCADE,
    fire_time        timestamptz  NOT NULL,
    kind             varchar(12)  NOT NULL,
    missed_until     timestamptz,
    missed_count     bigint       NOT NULL DEFAULT 0,  -- -1: 10000 or more
    param_time       timestamptz,
    node_id          varchar(200) NOT NULL,
    claimed_at       timestamptz  NOT NULL DEFAULT clock_timestamp(),
    status           varchar(16)  NOT NULL,
    job_name         varchar(100) NOT NULL,
    job_key          varchar(32),
    parameters       jsonb        NOT NULL DEFAULT '[]',
    pid              int,
    job_execution_id bigint,
    exit_code        int,
    exit_status      varchar(10),
    message          varchar(2500) NOT NULL DEFAULT '',
    finished_at      timestamptz,
    CONSTRAINT batch_schedule_firing_once_uk UNIQUE (schedule_id, fire_time),
    CONSTRAINT batch_schedule_firing_kind_ck CHECK (kind IN ('SCHEDULED', 'MISFIRE_RUN', 'MISFIRE_SKIP')),
    CONSTRAINT batch_schedule_firing_status_ck CHECK (status IN
        ('CLAIMED', 'LAUNCHED', 'FINISHED', 'FAILED_TO_LAUNCH', 'MISFIRED', 'ORPHANED'))
);
-- What a node looks at every tick: firings not finished.
CREATE INDEX batch_schedule_firing_open_ix ON batch_schedule_firing (node_id)
    WHERE status IN ('CLAIMED', 'LAUNCHED');

-- What each node did with each fire instant it considered.
CREATE TABLE batch_schedule_event (
    event_id         bigserial PRIMARY KEY,
    schedule_id      bigint       NOT NULL REFERENCES batch_schedule ON DELETE CASCADE,
    fire_time        timestamptz  NOT NULL,
    node_id          varchar(200) NOT NULL,
    outcome          varchar(16)  NOT NULL,
    firing_id        bigint REFERENCES batch_schedule_firing ON DELETE CASCADE,
    job_execution_id bigint,
    message          varchar(2500) NOT NULL DEFAULT '',
    recorded_at      timestamptz  NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_schedule_event_outcome_ck CHECK (outcome IN
        ('FIRED', 'SKIPPED_CLAIMED', 'MISFIRED', 'FAILED_TO_LAUNCH', 'FINISHED', 'ORPHANED'))
);
CREATE INDEX batch_schedule_event_schedule_ix ON batch_schedule_event (schedule_id, event_id);
CREATE INDEX batch_schedule_event_firing_ix ON batch_schedule_event (firing_id);

-- ---- time zone rules -------------------------------------------------------

-- ---- firing ----------------------------------------------------------------

-- ---- nodes -----------------------------------------------------------------
