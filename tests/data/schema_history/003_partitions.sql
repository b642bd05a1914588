-- cbatch job repository, schema version 3: partitioned steps.
--
-- A partitioned (manager) step execution has one worker step execution per
-- partition, created with it in one transaction and named
-- "<manager>:partition<i>". A worker claims an open partition with
-- FOR UPDATE SKIP LOCKED and runs it under its own batch_lock row
-- ("cbatch.partition:<step_execution_id>"): lease, heartbeat and fencing token
-- exactly like a job's lock, so a dead or cut-off worker's partition goes to
-- the next claimant and the old owner's late checkpoint is refused.
-- Wake-ups travel as NOTIFY on channel cbatch_partitions (payload: the job
-- execution id) when partitions appear, are handed back or end.

ALTER TABLE batch_step_execution
    ADD COLUMN manager_step_execution_id bigint REFERENCES batch_step_execution,
    ADD COLUMN partition_index  int,
    -- The current (or last) claimant: its process identity, a readable worker
    -- name (host, pid, thread), and the partition lock it holds it under.
    ADD COLUMN owner_id         varchar(200),
    ADD COLUMN worker           varchar(200),
    ADD COLUMN lock_name        varchar(400),
    ADD COLUMN fencing_token    bigint,
    ADD COLUMN claim_count      int NOT NULL DEFAULT 0;
CREATE INDEX batch_step_execution_manager_ix ON batch_step_execution (manager_step_execution_id)
    WHERE manager_step_execution_id IS NOT NULL;
-- What workers look for: open partitions (few rows, however old the repository).
CREATE INDEX batch_step_execution_open_partition_ix ON batch_step_execution (step_execution_id)
    WHERE partition_index IS NOT NULL AND status IN ('STARTING', 'STARTED');

-- Create a manager step execution (STARTED) and its partitions (STARTING) in
-- one transaction, only while the job execution is STARTED. p_partitions is a
-- JSON array of {"index": i, "context": {...}}. Returns the job execution's
-- status and the manager's id (NULL when not created).
CREATE FUNCTION batch_partitions_create(p_job_execution_id bigint, p_manager varchar,
    p_manager_context jsonb, p_partitions jsonb,
    OUT job_status varchar, OUT manager_step_execution_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
BEGIN
    SELECT e.status INTO job_status FROM batch_job_execution e
     WHERE e.job_execution_id = p_job_execution_id;
    IF job_status IS DISTINCT FROM 'STARTED' THEN
        RETURN;
    END IF;
    INSERT INTO batch_step_execution (job_execution_id, step_name, status, start_time)
    VALUES (p_job_execution_id, p_manager, 'STARTED', clock_timestamp())
    RETURNING step_execution_id INTO manager_step_execution_id;
    INSERT INTO batch_step_execution_context (step_execution_id, serialized_context)
    VALUES (manager_step_execution_id, p_manager_context);
    WITH p AS (
        SELECT (x->>'index')::int AS idx, x->'context' AS ctx
          FROM jsonb_array_elements(p_partitions) AS x),
    s AS (
        INSERT INTO batch_step_execution (job_execution_id, step_name, status,
                                          manager_step_execution_id, partition_index)
        SELECT p_job_execution_id, p_manager || ':partition' || p.idx, 'STARTING',
               manager_step_execution_id, p.idx
          FROM p ORDER BY p.idx
        RETURNING step_execution_id, partition_index)
    INSERT INTO batch_step_execution_context (step_execution_id, serialized_context)
    SELECT s.step_execution_id, p.ctx FROM s JOIN p ON p.idx = s.partition_index;
    PERFORM pg_notify('cbatch_partitions', p_job_execution_id::text);
END
$$;

-- Claim one open partition: one that nobody has claimed yet, or whose
-- claimant's partition lock lapsed (lease expired or released), of a STARTED
-- job execution whose own owner is alive, optionally only of some jobs or of
-- one execution. The row is taken FOR UPDATE SKIP LOCKED, so concurrent
-- claimants never wait for each other and never take the same partition;
-- its lock is then acquired (or taken over, ending a frozen owner's session)
-- with batch_lock_acquire, and the step execution's version moves on, so the
-- old owner's next checkpoint is refused even before its lock is looked at.
-- p_dead_owners: claimants the caller found dead on its own host (their
-- process is gone): their partitions are taken over at once, without waiting
-- for the lease (audited OWNER_DEAD_TAKEOVER). No row: nothing to claim.
CREATE FUNCTION batch_partition_claim(p_owner_id varchar, p_worker varchar,
    p_lease_seconds double precision, p_job_names varchar[], p_job_execution_id bigint,
    p_dead_owners varchar[] DEFAULT NULL)
RETURNS TABLE (step_execution_id bigint, job_execution_id bigint, job_instance_id bigint,
               job_name varchar, step_name varchar, manager_step_name varchar,
               partition_index int, lock_name varchar, fencing_token bigint, version bigint,
               outcome varchar, previous_owner varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s record;
    g record;
    v_lock varchar;
    v_version bigint;
BEGIN
    SELECT x.step_execution_id AS id, x.job_execution_id AS exec_id,
           e.job_instance_id AS inst_id, i.job_name AS jname, x.step_name AS sname,
           m.step_name AS mname, x.partition_index AS pidx, x.owner_id AS prev
      INTO s
      FROM batch_step_execution x
      JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id
      JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id
      JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id
     WHERE x.partition_index IS NOT NULL AND x.status IN ('STARTING', 'STARTED')
       AND e.status = 'STARTED'
       AND (p_job_execution_id IS NULL OR x.job_execution_id = p_job_execution_id)
       AND (p_job_names IS NULL OR i.job_name = ANY (p_job_names))
       -- the execution's own lock is alive (a dead manager's partitions wait
       -- for the restart, which buries them)
       AND (e.lock_name IS NULL OR EXISTS (SELECT 1 FROM batch_lock l
             WHERE l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token
               AND NOT l.released AND l.locked_until >= clock_timestamp()))
       AND (x.lock_name IS NULL OR x.owner_id = ANY (p_dead_owners)
            OR NOT EXISTS (SELECT 1 FROM batch_lock l
             WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
               AND NOT l.released AND l.locked_until >= clock_timestamp()))
     ORDER BY x.step_execution_id
     LIMIT 1
       FOR UPDATE OF x SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_lock := 'cbatch.partition:' || s.id;
    SELECT * INTO g FROM batch_lock_acquire(v_lock, p_owner_id, p_lease_seconds,
        CASE WHEN s.prev = ANY (p_dead_owners) THEN s.prev END);
    IF g.fencing_token IS NULL THEN
        -- Its lease is still running after all (a clock tick): not ours.
        RETURN;
    END IF;
    UPDATE batch_lock l SET job_execution_id = s.exec_id WHERE l.lock_name = v_lock;
    UPDATE batch_step_execution x
       SET status = 'STARTED', start_time = coalesce(x.start_time, clock_timestamp()),
           owner_id = p_owner_id, worker = p_worker, lock_name = v_lock,
           fencing_token = g.fencing_token, claim_count = x.claim_count + 1,
           version = x.version + 1, last_updated = clock_timestamp()
     WHERE x.step_execution_id = s.id
    RETURNING x.version INTO v_version;
    RETURN QUERY SELECT s.id, s.exec_id, s.inst_id, s.jname, s.sname, s.mname, s.pidx, v_lock,
                        g.fencing_token, v_version, g.outcome, s.prev;
END
$$;

-- The claimants of running partitions on one host (owner ids starting with
-- p_host || ':') whose partition lock is live: a worker checks which of them
-- are dead processes of its own host before it claims.
CREATE FUNCTION batch_partition_holders(p_host varchar)
RETURNS SETOF varchar LANGUAGE sql STABLE AS $$
    SELECT DISTINCT x.owner_id FROM batch_step_execution x
      JOIN batch_lock l ON l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
     WHERE x.partition_index IS NOT NULL AND x.status = 'STARTED'
       AND NOT l.released AND l.locked_until >= clock_timestamp()
       AND left(x.owner_id, length(p_host) + 1) = p_host || ':'
$$;

-- End a claimed partition: only while it still carries the caller's fencing
-- token (a fenced owner cannot end the partition its successor runs).
-- p_status 'STARTING' hands it back unfinished (a worker asked to stop): the
-- next claimant resumes it from its committed context. The partition lock is
-- released either way and the managers and workers are woken. False: the
-- partition was no longer this owner's.
CREATE FUNCTION batch_partition_finish(p_step_execution_id bigint, p_fencing_token bigint,
    p_owner_id varchar, p_status varchar, p_exit_code varchar, p_exit_message varchar,
    p_rollbacks bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_exec bigint;
    v_lock varchar;
BEGIN
    UPDATE batch_step_execution x
       SET status = p_status,
           exit_code = CASE WHEN p_status = 'STARTING' THEN 'EXECUTING' ELSE p_exit_code END,
           exit_message = left(p_exit_message, 2500),
           rollback_count = x.rollback_count + p_rollbacks,
           end_time = CASE WHEN p_status = 'STARTING' THEN NULL ELSE clock_timestamp() END,
           last_updated = clock_timestamp(), version = x.version + 1
     WHERE x.step_execution_id = p_step_execution_id AND x.fencing_token = p_fencing_token
       AND x.status = 'STARTED'
    RETURNING x.job_execution_id, x.lock_name INTO v_exec, v_lock;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM batch_lock_release(v_lock, p_owner_id, p_fencing_token, 0, v_exec);
    PERFORM pg_notify('cbatch_partitions', v_exec::text);
    RETURN true;
END
$$;

-- The manager's view of its partitions, and its one duty towards them: while
-- the job execution is being stopped, partitions that nobody runs (never
-- claimed, or their claimant's lease lapsed) end STOPPED here, since no
-- worker will claim them any more.
CREATE FUNCTION batch_partitions_poll(p_manager_step_execution_id bigint,
    OUT job_status varchar, OUT total int, OUT completed int, OUT failed int,
    OUT stopped int, OUT running int, OUT open int,
    OUT read_count bigint, OUT write_count bigint, OUT filter_count bigint,
    OUT commit_count bigint, OUT read_skip_count bigint, OUT write_skip_count bigint,
    OUT process_skip_count bigint, OUT rollback_count bigint,
    OUT duplicate_target_write_count bigint, OUT first_failure text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
BEGIN
    SELECT e.status INTO job_status FROM batch_step_execution m
      JOIN batch_job_execution e USING (job_execution_id)
     WHERE m.step_execution_id = p_manager_step_execution_id;
    IF job_status = 'STOPPING' THEN
        UPDATE batch_step_execution x
           SET status = 'STOPPED', exit_code = 'STOPPED',
               exit_message = 'stopped before a worker ran it',
               end_time = clock_timestamp(), last_updated = clock_timestamp(),
               version = x.version + 1
         WHERE x.manager_step_execution_id = p_manager_step_execution_id
           AND x.status IN ('STARTING', 'STARTED')
           AND (x.lock_name IS NULL OR NOT EXISTS (SELECT 1 FROM batch_lock l
                 WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
                   AND NOT l.released AND l.locked_until >= clock_timestamp()));
    END IF;
    SELECT count(*), count(*) FILTER (WHERE x.status = 'COMPLETED'),
           count(*) FILTER (WHERE x.status IN ('FAILED', 'ABANDONED', 'UNKNOWN')),
           count(*) FILTER (WHERE x.status = 'STOPPED'),
           count(*) FILTER (WHERE x.status IN ('STARTED', 'STOPPING')),
           count(*) FILTER (WHERE x.status = 'STARTING'),
           coalesce(sum(x.read_count), 0), coalesce(sum(x.write_count), 0),
           coalesce(sum(x.filter_count), 0), coalesce(sum(x.commit_count), 0),
           coalesce(sum(x.read_skip_count), 0), coalesce(sum(x.write_skip_count), 0),
           coalesce(sum(x.process_skip_count), 0), coalesce(sum(x.rollback_count), 0),
           coalesce(sum(x.duplicate_target_write_count), 0),
           (array_agg(x.step_name || ': ' || x.exit_message ORDER BY x.partition_index)
              FILTER (WHERE x.status IN ('FAILED', 'ABANDONED', 'UNKNOWN')))[1]
      INTO total, completed, failed, stopped, running, open, read_count, write_count,
           filter_count, commit_count, read_skip_count, write_skip_count,
           process_skip_count, rollback_count, duplicate_target_write_count, first_failure
      FROM batch_step_execution x
     WHERE x.manager_step_execution_id = p_manager_step_execution_id;
    -- The manager's own row shows the running totals (`show`, a dashboard);
    -- written only when they moved, at most once per poll.
    UPDATE batch_step_execution m
       SET read_count = batch_partitions_poll.read_count,
           write_count = batch_partitions_poll.write_count,
           filter_count = batch_partitions_poll.filter_count,
           commit_count = batch_partitions_poll.commit_count,
           read_skip_count = batch_partitions_poll.read_skip_count,
           write_skip_count = batch_partitions_poll.write_skip_count,
           process_skip_count = batch_partitions_poll.process_skip_count,
           duplicate_target_write_count = batch_partitions_poll.duplicate_target_write_count,
           last_updated = clock_timestamp()
     WHERE m.step_execution_id = p_manager_step_execution_id AND m.status = 'STARTED'
       AND (m.read_count, m.write_count, m.commit_count, m.filter_count)
           IS DISTINCT FROM (batch_partitions_poll.read_count, batch_partitions_poll.write_count,
                             batch_partitions_poll.commit_count,
                             batch_partitions_poll.filter_count);
END
$$;

-- End the manager: its counts are the sums of its partitions'; partitions
-- still open (the manager gives up: its lock was lost, the repository failed)
-- end FAILED with it, their version moved on, so that no worker commits
-- another chunk of an execution that has ended.
CREATE FUNCTION batch_partitions_end(p_manager_step_execution_id bigint, p_status varchar,
    p_exit_code varchar, p_exit_message varchar)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_step_execution x
       SET status = 'FAILED', exit_code = 'FAILED',
           exit_message = 'manager step ended: ' || left(p_exit_message, 2400),
           end_time = clock_timestamp(), last_updated = clock_timestamp(),
           version = x.version + 1
     WHERE x.manager_step_execution_id = p_manager_step_execution_id
       AND x.status IN ('STARTING', 'STARTED', 'STOPPING');
    UPDATE batch_step_execution m
       SET status = p_status, exit_code = p_exit_code, exit_message = left(p_exit_message, 2500),
           read_count = s.r, write_count = s.w, filter_count = s.f, commit_count = s.c,
           read_skip_count = s.rs, write_skip_count = s.ws, process_skip_count = s.ps,
           rollback_count = s.rb, duplicate_target_write_count = s.d,
           end_time = clock_timestamp(), last_updated = clock_timestamp(),
           version = m.version + 1
      FROM (SELECT coalesce(sum(read_count), 0) r, coalesce(sum(write_count), 0) w,
                   coalesce(sum(filter_count), 0) f, coalesce(sum(commit_count), 0) c,
                   coalesce(sum(read_skip_count), 0) rs, coalesce(sum(write_skip_count), 0) ws,
                   coalesce(sum(process_skip_count), 0) ps, coalesce(sum(rollback_count), 0) rb,
                   coalesce(sum(duplicate_target_write_count), 0) d
              FROM batch_step_execution
             WHERE manager_step_execution_id = p_manager_step_execution_id) s
     WHERE m.step_execution_id = p_manager_step_execution_id;
END
$$;

-- The chunk checkpoint again, for partitions: a partition's chunk must not
-- take the job execution's row lock. Every partition of an execution commits
-- into the same job execution row, so taking its lock in each checkpoint
-- would queue the partitions' commits behind each other, and a restart
-- that buries a dead execution (steps, then the job row) would deadlock with
-- them. A partition reads the job's status without locking; its manager keeps
-- the execution's heartbeat. Everything else is as in version 1.
CREATE OR REPLACE FUNCTION batch_chunk_checkpoint(
    p_step_execution_id bigint, p_version bigint,
    p_read bigint, p_write bigint, p_filter bigint, p_commit bigint,
    p_read_skip bigint, p_write_skip bigint, p_process_skip bigint, p_duplicate bigint,
    p_context jsonb, p_job_execution_id bigint, p_job_context jsonb,
    p_lock_name varchar, p_fencing_token bigint, p_lease_seconds double precision)
RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar;
    v_partition int;
BEGIN
    IF p_lock_name IS NOT NULL THEN
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
           duplicate_target_write_count = duplicate_target_write_count + p_duplicate
               + coalesce(nullif(current_setting('cbatch.duplicate_writes', true), '')::bigint, 0),
           version = version + 1,
           last_updated = clock_timestamp()
     WHERE step_execution_id = p_step_execution_id AND version = p_version
    RETURNING partition_index INTO v_partition;
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
    IF v_partition IS NOT NULL THEN
        SELECT status INTO v_status FROM batch_job_execution
         WHERE job_execution_id = p_job_execution_id;
    ELSE
        UPDATE batch_job_execution SET last_updated = clock_timestamp(),
               heartbeat_time = clock_timestamp()
         WHERE job_execution_id = p_job_execution_id
         RETURNING status INTO v_status;
    END IF;
    RETURN v_status;
END
$$;
