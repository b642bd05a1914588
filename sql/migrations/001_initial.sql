-- cbatch job repository, schema version 1.
-- Table and column names follow Spring Batch 5 where the concept is the same.
-- Applied by `cbatch schema init` inside one transaction, under an advisory lock.

CREATE TABLE batch_job_instance (
    job_instance_id bigserial PRIMARY KEY,
    version         bigint       NOT NULL DEFAULT 0,
    job_name        varchar(100) NOT NULL,
    job_key         char(32)     NOT NULL,
    create_time     timestamptz  NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_job_instance_key_un UNIQUE (job_name, job_key)
);

CREATE TABLE batch_job_execution (
    job_execution_id bigserial PRIMARY KEY,
    version          bigint       NOT NULL DEFAULT 0,
    job_instance_id  bigint       NOT NULL REFERENCES batch_job_instance,
    create_time      timestamptz  NOT NULL DEFAULT clock_timestamp(),
    start_time       timestamptz,
    end_time         timestamptz,
    status           varchar(10)  NOT NULL,
    exit_code        varchar(2500) NOT NULL DEFAULT 'UNKNOWN',
    exit_message     varchar(2500) NOT NULL DEFAULT '',
    last_updated     timestamptz  NOT NULL DEFAULT clock_timestamp(),
    -- Who runs it: a per-process identity (host, pid, random id), and the
    -- lease/fencing state of the lock it holds (see batch_lock).
    owner_id         varchar(200),
    heartbeat_time   timestamptz,
    lock_name        varchar(400),
    fencing_token    bigint,
    restart_of       bigint REFERENCES batch_job_execution,
    CONSTRAINT batch_job_execution_status_ck CHECK (status IN
        ('STARTING','STARTED','STOPPING','STOPPED','COMPLETED','FAILED','ABANDONED','UNKNOWN'))
);
CREATE INDEX batch_job_execution_instance_ix ON batch_job_execution (job_instance_id, job_execution_id);
CREATE INDEX batch_job_execution_restart_of_ix ON batch_job_execution (restart_of) WHERE restart_of IS NOT NULL;
-- The database itself forbids two live executions of one instance: launches can
-- race under READ COMMITTED and the loser gets a unique violation, not a duplicate.
CREATE UNIQUE INDEX batch_job_execution_one_live_ux ON batch_job_execution (job_instance_id)
    WHERE status IN ('STARTING','STARTED','STOPPING');

CREATE TABLE batch_job_execution_params (
    job_execution_id bigint        NOT NULL REFERENCES batch_job_execution,
    parameter_name   varchar(100)  NOT NULL,
    parameter_type   varchar(100)  NOT NULL,
    parameter_value  varchar(2500) NOT NULL,
    identifying      boolean       NOT NULL,
    PRIMARY KEY (job_execution_id, parameter_name)
);
-- Serves the run.id incrementer: newest run.id of a job.
CREATE INDEX batch_job_execution_params_name_ix ON batch_job_execution_params (parameter_name, job_execution_id);

CREATE TABLE batch_job_execution_context (
    job_execution_id   bigint PRIMARY KEY REFERENCES batch_job_execution,
    serialized_context jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE batch_step_execution (
    step_execution_id  bigserial PRIMARY KEY,
    version            bigint       NOT NULL DEFAULT 0,
    step_name          varchar(100) NOT NULL,
    job_execution_id   bigint       NOT NULL REFERENCES batch_job_execution,
    create_time        timestamptz  NOT NULL DEFAULT clock_timestamp(),
    start_time         timestamptz,
    end_time           timestamptz,
    status             varchar(10)  NOT NULL,
    commit_count       bigint NOT NULL DEFAULT 0,
    read_count         bigint NOT NULL DEFAULT 0,
    filter_count       bigint NOT NULL DEFAULT 0,
    write_count        bigint NOT NULL DEFAULT 0,
    read_skip_count    bigint NOT NULL DEFAULT 0,
    write_skip_count   bigint NOT NULL DEFAULT 0,
    process_skip_count bigint NOT NULL DEFAULT 0,
    rollback_count     bigint NOT NULL DEFAULT 0,
    duplicate_target_write_count bigint NOT NULL DEFAULT 0,
    exit_code          varchar(2500) NOT NULL DEFAULT 'EXECUTING',
    exit_message       varchar(2500) NOT NULL DEFAULT '',
    last_updated       timestamptz  NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_step_execution_status_ck CHECK (status IN
        ('STARTING','STARTED','STOPPING','STOPPED','COMPLETED','FAILED','ABANDONED','UNKNOWN'))
);
CREATE INDEX batch_step_execution_job_ix ON batch_step_execution (job_execution_id, step_name);

CREATE TABLE batch_step_execution_context (
    step_execution_id  bigint PRIMARY KEY REFERENCES batch_step_execution,
    serialized_context jsonb NOT NULL DEFAULT '{}'
);

-- Execution lock with lease and fencing token (all times are the database's).
CREATE TABLE batch_lock (
    lock_name     varchar(400) PRIMARY KEY,
    owner_id      varchar(200) NOT NULL,
    fencing_token bigint       NOT NULL,
    locked_until  timestamptz  NOT NULL,
    locked_at     timestamptz  NOT NULL,
    updated_at    timestamptz  NOT NULL,
    -- Released by its owner (or forced): a later taker is not a lease takeover.
    released      boolean      NOT NULL DEFAULT false,
    job_execution_id bigint
);

-- Every lock outcome, so that a skip is never confused with a failure.
CREATE TABLE batch_lock_audit (
    audit_id         bigserial PRIMARY KEY,
    lock_name        varchar(400) NOT NULL,
    owner_id         varchar(200) NOT NULL,
    outcome          varchar(30)  NOT NULL,
    fencing_token    bigint,
    job_execution_id bigint,
    detail           text NOT NULL DEFAULT '',
    event_time       timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_lock_audit_outcome_ck CHECK (outcome IN
        ('ACQUIRED','SKIPPED_HELD','LEASE_EXPIRED_TAKEOVER','HEARTBEAT_FAILED',
         'FORCE_UNLOCKED','RELEASED','FENCED','ERROR'))
);
CREATE INDEX batch_lock_audit_name_ix ON batch_lock_audit (lock_name, event_time);
