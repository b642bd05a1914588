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

-- The chunk checkpoint: one statement that the engine pipelines with the
-- chunk's writes and COMMIT. It raises (so the pipeline aborts and the COMMIT
-- is refused) instead of returning 0 rows, because in a pipeline a 0-row
-- answer is only read after COMMIT has already run.
--   CB001  the step execution's version is not the one this process holds
--   CB002  the execution lost its lock (fencing token no longer current)
-- Returns the job execution's status, so a `stop` request is seen for free.
CREATE FUNCTION batch_chunk_checkpoint(
    p_step_execution_id bigint, p_version bigint,
    p_read bigint, p_write bigint, p_filter bigint, p_commit bigint,
    p_read_skip bigint, p_write_skip bigint, p_process_skip bigint, p_duplicate bigint,
    p_context jsonb, p_job_execution_id bigint, p_job_context jsonb,
    p_lock_name varchar, p_fencing_token bigint, p_lease_seconds double precision)
RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar;
BEGIN
    IF p_lock_name IS NOT NULL THEN
        -- The row lock this UPDATE takes orders the check against a takeover:
        -- a takeover either committed first (we see its token and fail) or
        -- waits for our COMMIT. A lock released by force (unlock --force) is
        -- lost too: its holder must stop at its next chunk, not extend a lease
        -- that the operator has just ended.
        UPDATE batch_lock
           SET locked_until = greatest(locked_until,
                   clock_timestamp() + make_interval(secs => p_lease_seconds)),
               updated_at = clock_timestamp()
         WHERE lock_name = p_lock_name AND fencing_token = p_fencing_token
           AND NOT released;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'fenced off: lock "%" no longer carries fencing token %',
                p_lock_name, p_fencing_token USING ERRCODE = 'CB002';
        END IF;
    END IF;
    UPDATE batch_step_execution
       SET read_count = read_count + p_read,
           write_count = write_count + p_write,
           filter_count = filter_count + p_filter,
           commit_count = commit_count + p_commit,
           read_skip_count = read_skip_count + p_read_skip,
           write_skip_count = write_skip_count + p_write_skip,
           process_skip_count = process_skip_count + p_process_skip,
           -- Writers add the conflicts they absorbed to a transaction-local
           -- setting, so the count commits with the chunk in the same round trip.
           duplicate_target_write_count = duplicate_target_write_count + p_duplicate
               + coalesce(nullif(current_setting('cbatch.duplicate_writes', true), '')::bigint, 0),
           version = version + 1,
           last_updated = clock_timestamp()
     WHERE step_execution_id = p_step_execution_id AND version = p_version;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'step execution % is not at version % (changed by another process)',
            p_step_execution_id, p_version USING ERRCODE = 'CB001';
    END IF;
    IF p_context IS NOT NULL THEN
        UPDATE batch_step_execution_context SET serialized_context = p_context
         WHERE step_execution_id = p_step_execution_id;
    END IF;
    IF p_job_context IS NOT NULL THEN
        UPDATE batch_job_execution_context SET serialized_context = p_job_context
         WHERE job_execution_id = p_job_execution_id;
    END IF;
    UPDATE batch_job_execution SET last_updated = clock_timestamp(),
           heartbeat_time = clock_timestamp()
     WHERE job_execution_id = p_job_execution_id
     RETURNING status INTO v_status;
    RETURN v_status;
END
$$;

-- Take the lock, or take it over when its lease has expired, in one statement
-- with its audit row. The fencing token grows on every new owner, never resets.
-- All times are the database's: client clocks play no part.
CREATE FUNCTION batch_lock_acquire(p_lock_name varchar, p_owner_id varchar,
    p_lease_seconds double precision, OUT fencing_token bigint, OUT outcome varchar,
    OUT holder varchar, OUT held_until timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    l batch_lock%ROWTYPE;
    v_until timestamptz := clock_timestamp() + make_interval(secs => p_lease_seconds);
BEGIN
    INSERT INTO batch_lock AS b (lock_name, owner_id, fencing_token, locked_until, locked_at,
                                 updated_at)
    VALUES (p_lock_name, p_owner_id, 1, v_until, clock_timestamp(), clock_timestamp())
    ON CONFLICT (lock_name) DO NOTHING
    RETURNING b.fencing_token INTO fencing_token;
    IF FOUND THEN
        outcome := 'ACQUIRED';
    ELSE
        SELECT * INTO l FROM batch_lock b WHERE b.lock_name = p_lock_name FOR UPDATE;
        holder := l.owner_id;
        held_until := l.locked_until;
        IF l.locked_until < clock_timestamp() THEN
            UPDATE batch_lock b SET owner_id = p_owner_id, fencing_token = l.fencing_token + 1,
                   locked_until = v_until, locked_at = clock_timestamp(),
                   updated_at = clock_timestamp(), released = false, job_execution_id = NULL
             WHERE b.lock_name = p_lock_name;
            fencing_token := l.fencing_token + 1;
            outcome := CASE WHEN l.released THEN 'ACQUIRED' ELSE 'LEASE_EXPIRED_TAKEOVER' END;
        ELSE
            fencing_token := NULL;
            outcome := 'SKIPPED_HELD';
        END IF;
    END IF;
    INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, detail)
    VALUES (p_lock_name, p_owner_id, outcome, coalesce(fencing_token, l.fencing_token),
            CASE outcome
              WHEN 'SKIPPED_HELD' THEN format('held by %s until %s', l.owner_id, l.locked_until)
              WHEN 'LEASE_EXPIRED_TAKEOVER' THEN
                format('lease of %s expired at %s', l.owner_id, l.locked_until)
              ELSE '' END);
END
$$;

-- Extend the lease if we still own it (owner and token). False: the lock is lost.
CREATE FUNCTION batch_lock_heartbeat(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint, p_lease_seconds double precision, p_job_execution_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_lock
       SET locked_until = greatest(locked_until,
               clock_timestamp() + make_interval(secs => p_lease_seconds)),
           updated_at = clock_timestamp()
     WHERE lock_name = p_lock_name AND owner_id = p_owner_id
       AND fencing_token = p_fencing_token AND NOT released;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE batch_job_execution SET heartbeat_time = clock_timestamp()
     WHERE job_execution_id = p_job_execution_id;
    RETURN true;
END
$$;

-- Release by the owner, keeping the lock until at least p_at_least_seconds
-- after it was taken (lock-at-least-for). The row stays: its token must grow.
CREATE FUNCTION batch_lock_release(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint, p_at_least_seconds double precision, p_job_execution_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_lock
       SET locked_until = greatest(locked_at + make_interval(secs => p_at_least_seconds),
                                   clock_timestamp()),
           updated_at = clock_timestamp(), released = true
     WHERE lock_name = p_lock_name AND owner_id = p_owner_id
       AND fencing_token = p_fencing_token AND NOT released;
    IF NOT FOUND THEN
        -- Taken over, or already released (by force): not ours to end again.
        RETURN false;
    END IF;
    INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, job_execution_id)
    VALUES (p_lock_name, p_owner_id, 'RELEASED', p_fencing_token, p_job_execution_id);
    RETURN true;
END
$$;
