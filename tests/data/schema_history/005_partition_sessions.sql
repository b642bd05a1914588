-- cbatch job repository: the sessions of partitions that end.
--
-- A partition's claimant runs its chunks on its own database session, which
-- batch_lock_acquire records on the partition's lock row
-- ("cbatch.partition:<step execution id>"). When that claimant freezes inside
-- a chunk transaction (SIGSTOP, a paused VM), its session keeps the chunk's
-- row locks for as long as it stays frozen. A takeover of the same lock name
-- ends it, but a partition that is ended, buried or superseded is never
-- claimed again (a restart makes new partitions, with new names): so every
-- path that ends open partitions ends their claimants' sessions first, before
-- anything touches the rows they may hold. Then the lock row goes: its
-- partition can never be claimed again, so its name is never reused and its
-- fencing token can never repeat; batch_lock_audit keeps the history (it has
-- no foreign key to batch_lock).

-- End the sessions recorded on the lock rows of partitions p_partitions
-- (step execution ids), when not released: all of them, or with p_lapsed_only
-- only those whose lease ran out (a live claimant of a partition that ends
-- STOPPED is left alone). A session that also owns another live lock moved on
-- to other work and is not this partition's any more: left alone too. Raises
-- 55P03, naming the partition, when a session could not be ended (its row
-- locks would stay). Returns what happened to each session (NULL: none).
CREATE FUNCTION batch_partition_claimants_end(p_partitions bigint[], p_lapsed_only boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    l record;
    e record;
    v_notes text;
BEGIN
    -- A plain read: never waits on a frozen claimant's row lock.
    FOR l IN SELECT b.lock_name, b.owner_id, b.owner_backend_pid, b.owner_backend_start
               FROM batch_step_execution x
               JOIN batch_lock b ON b.lock_name = x.lock_name
              WHERE x.step_execution_id = ANY (p_partitions)
                AND x.partition_index IS NOT NULL
                AND NOT b.released AND b.owner_backend_pid IS NOT NULL
                AND (NOT p_lapsed_only OR b.locked_until < clock_timestamp())
              ORDER BY b.lock_name
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM batch_lock o
             WHERE o.owner_backend_pid = l.owner_backend_pid
               AND o.owner_backend_start = l.owner_backend_start
               AND o.lock_name <> l.lock_name AND NOT o.released
               AND o.locked_until >= clock_timestamp());
        SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid, l.owner_backend_start);
        IF NOT e.ended THEN
            RAISE EXCEPTION 'partition lock "%" of % cannot be ended: %', l.lock_name,
                l.owner_id, e.note USING ERRCODE = '55P03';
        END IF;
        v_notes := concat_ws('; ', v_notes, l.lock_name || ': ' || e.note);
    END LOOP;
    RETURN v_notes;
END
$$;

-- Remove the lock rows of the partitions among p_partitions that have ended
-- (their claimants' sessions already ended: see batch_partition_claimants_end).
-- A lock its claimant did not release gets an audit row saying why it went.
-- Returns the number of rows removed.
CREATE FUNCTION batch_partition_locks_drop(p_partitions bigint[], p_why text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_n int;
BEGIN
    WITH d AS (
        DELETE FROM batch_lock b USING batch_step_execution x
         WHERE x.step_execution_id = ANY (p_partitions) AND x.partition_index IS NOT NULL
           AND x.status NOT IN ('STARTING', 'STARTED', 'STOPPING')
           AND b.lock_name = x.lock_name
        RETURNING b.lock_name, b.owner_id, b.fencing_token, b.released, x.job_execution_id,
                  x.status),
    a AS (
        INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token,
                                      job_execution_id, detail)
        SELECT d.lock_name, d.owner_id, 'FORCE_UNLOCKED', d.fencing_token, d.job_execution_id,
               format('partition ended %s: %s; lock removed', d.status, p_why)
          FROM d WHERE NOT d.released)
    SELECT count(*) INTO v_n FROM d;
    RETURN v_n;
END
$$;

-- Before an execution is buried (its owner lost: a restart, `stop`, `abandon`):
-- end the sessions of every claimant of its open partitions, live or not
-- (the burial fences them all; a frozen one holds rows the next run needs).
CREATE FUNCTION batch_execution_claimants_end(p_job_execution_id bigint)
RETURNS text LANGUAGE sql AS $$
    SELECT batch_partition_claimants_end(array(
        SELECT x.step_execution_id FROM batch_step_execution x
         WHERE x.job_execution_id = p_job_execution_id AND x.partition_index IS NOT NULL
           AND x.status IN ('STARTING', 'STARTED', 'STOPPING')), false)
$$;

-- After the burial: the lock rows of its ended partitions go.
CREATE FUNCTION batch_execution_partition_locks_drop(p_job_execution_id bigint, p_why text)
RETURNS int LANGUAGE sql AS $$
    SELECT batch_partition_locks_drop(array(
        SELECT x.step_execution_id FROM batch_step_execution x
         WHERE x.job_execution_id = p_job_execution_id AND x.partition_index IS NOT NULL),
        p_why)
$$;

-- A new execution of job instance p_job_instance_id is about to make the
-- partitions of step p_manager anew: partitions of earlier executions that
-- still have a lock row (ended by a path that left it: an older version, a
-- burial that could not remove it) are superseded. Their claimants' sessions
-- end, then their lock rows go. Returns the number of rows removed.
CREATE FUNCTION batch_partitions_supersede(p_job_instance_id bigint, p_manager varchar)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[];
BEGIN
    SELECT array_agg(x.step_execution_id) INTO v_ids
      FROM batch_step_execution x
      JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id
      JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id
      JOIN batch_lock b ON b.lock_name = x.lock_name
     WHERE e.job_instance_id = p_job_instance_id AND m.step_name = p_manager
       AND x.status NOT IN ('STARTING', 'STARTED', 'STOPPING');
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM batch_partition_claimants_end(v_ids, false);
    RETURN batch_partition_locks_drop(v_ids, 'superseded by a new execution');
END
$$;

-- As in version 3, and a partition that ends (not handed back) loses its lock
-- row after the release (which audits it): its name is never claimed again.
CREATE OR REPLACE FUNCTION batch_partition_finish(p_step_execution_id bigint,
    p_fencing_token bigint, p_owner_id varchar, p_status varchar, p_exit_code varchar,
    p_exit_message varchar, p_rollbacks bigint)
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
    IF p_status <> 'STARTING' THEN
        -- A handed-back partition keeps its row: the next claimant's token
        -- must grow from it.
        DELETE FROM batch_lock b WHERE b.lock_name = v_lock;
    END IF;
    PERFORM pg_notify('cbatch_partitions', v_exec::text);
    RETURN true;
END
$$;

-- As in version 3; while stopping, the partitions that end STOPPED here
-- (nobody runs them: never claimed, or their claimant's lease lapsed) have
-- their lapsed claimants' sessions ended first (a frozen one would keep its
-- rows locked from the restart), and their lock rows removed.
CREATE OR REPLACE FUNCTION batch_partitions_poll(p_manager_step_execution_id bigint,
    OUT job_status varchar, OUT total int, OUT completed int, OUT failed int,
    OUT stopped int, OUT running int, OUT open int,
    OUT read_count bigint, OUT write_count bigint, OUT filter_count bigint,
    OUT commit_count bigint, OUT read_skip_count bigint, OUT write_skip_count bigint,
    OUT process_skip_count bigint, OUT rollback_count bigint,
    OUT duplicate_target_write_count bigint, OUT first_failure text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    v_ids bigint[];
BEGIN
    SELECT e.status INTO job_status FROM batch_step_execution m
      JOIN batch_job_execution e USING (job_execution_id)
     WHERE m.step_execution_id = p_manager_step_execution_id;
    IF job_status = 'STOPPING' THEN
        SELECT array_agg(x.step_execution_id) INTO v_ids FROM batch_step_execution x
         WHERE x.manager_step_execution_id = p_manager_step_execution_id
           AND x.status IN ('STARTING', 'STARTED')
           AND (x.lock_name IS NULL OR NOT EXISTS (SELECT 1 FROM batch_lock l
                 WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
                   AND NOT l.released AND l.locked_until >= clock_timestamp()));
    END IF;
    IF v_ids IS NOT NULL THEN
        PERFORM batch_partition_claimants_end(v_ids, true);
        UPDATE batch_step_execution x
           SET status = 'STOPPED', exit_code = 'STOPPED',
               exit_message = 'stopped before a worker ran it',
               end_time = clock_timestamp(), last_updated = clock_timestamp(),
               version = x.version + 1
         WHERE x.step_execution_id = ANY (v_ids)
           AND x.status IN ('STARTING', 'STARTED')
           AND (x.lock_name IS NULL OR NOT EXISTS (SELECT 1 FROM batch_lock l
                 WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
                   AND NOT l.released AND l.locked_until >= clock_timestamp()));
        PERFORM batch_partition_locks_drop(v_ids, 'stopped while its claimant''s lease lapsed');
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

-- As in version 3; the partitions still open end FAILED only after their
-- claimants' sessions ended (a frozen claimant keeps its chunk's rows locked,
-- a live one could not commit another chunk anyway), and every partition's
-- lock row goes with it.
CREATE OR REPLACE FUNCTION batch_partitions_end(p_manager_step_execution_id bigint,
    p_status varchar, p_exit_code varchar, p_exit_message varchar)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_open bigint[];
BEGIN
    SELECT array_agg(x.step_execution_id) INTO v_open FROM batch_step_execution x
     WHERE x.manager_step_execution_id = p_manager_step_execution_id
       AND x.status IN ('STARTING', 'STARTED', 'STOPPING');
    IF v_open IS NOT NULL THEN
        PERFORM batch_partition_claimants_end(v_open, false);
    END IF;
    UPDATE batch_step_execution x
       SET status = 'FAILED', exit_code = 'FAILED',
           exit_message = 'manager step ended: ' || left(p_exit_message, 2400),
           end_time = clock_timestamp(), last_updated = clock_timestamp(),
           version = x.version + 1
     WHERE x.manager_step_execution_id = p_manager_step_execution_id
       AND x.status IN ('STARTING', 'STARTED', 'STOPPING');
    IF v_open IS NOT NULL THEN
        PERFORM batch_partition_locks_drop(v_open, 'its manager step ended');
    END IF;
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

-- The work-queue reader found no unlocked row matching its queue, though
-- matching rows exist (their lockers' transaction ids: p_xids, the rows'
-- xmax). End of input only when every such row is held by a live sibling
-- partition of execution p_job_execution_id (it will commit them, or its
-- partition is reclaimed and they are claimed again). A holder whose session
-- is recorded on a partition lock of this job that is no longer live (lapsed,
-- not released) is a frozen or lost claimant: its session is ended, and the
-- reader claims again. Any other holder (another job, a session nobody
-- recorded) is waited for.
--   verdict  'done' | 'claim' (claim again now) | 'wait' (look again soon)
--   note     who holds the rows, for the reader's message
--   wait_seconds  how long the reader waits at most: the lease of the lock
--            the caller runs under (30 s when unknown)
CREATE FUNCTION batch_queue_holders(p_xids text[], p_job_execution_id bigint,
    p_step_execution_id bigint, OUT verdict varchar, OUT note text,
    OUT wait_seconds double precision)
LANGUAGE plpgsql AS $$
DECLARE
    h record;
    e record;
    v_job varchar;
BEGIN
    verdict := 'done';
    SELECT i.job_name INTO v_job FROM batch_job_execution x
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE x.job_execution_id = p_job_execution_id;
    SELECT extract(epoch FROM l.locked_until - l.updated_at) INTO wait_seconds
      FROM batch_step_execution s
      JOIN batch_job_execution x ON x.job_execution_id = s.job_execution_id
      JOIN batch_lock l ON l.lock_name = coalesce(s.lock_name, x.lock_name)
     WHERE s.step_execution_id = p_step_execution_id;
    wait_seconds := coalesce(nullif(greatest(wait_seconds, 0), 0), 30);
    PERFORM pg_stat_clear_snapshot();
    FOR h IN SELECT DISTINCT k.pid, a.backend_start
               FROM pg_locks k
               JOIN pg_stat_activity a ON a.pid = k.pid
              WHERE k.locktype = 'transactionid' AND k.mode = 'ExclusiveLock' AND k.granted
                AND k.transactionid::text = ANY (p_xids) AND k.pid <> pg_backend_pid()
    LOOP
        -- A live sibling: leave its rows to it.
        CONTINUE WHEN EXISTS (SELECT 1 FROM batch_lock l
              JOIN batch_step_execution s ON s.lock_name = l.lock_name
               AND s.fencing_token = l.fencing_token
             WHERE s.job_execution_id = p_job_execution_id AND s.partition_index IS NOT NULL
               AND s.status = 'STARTED' AND NOT l.released
               AND l.locked_until >= clock_timestamp()
               AND l.owner_backend_pid = h.pid AND l.owner_backend_start = h.backend_start);
        -- A claimant of this job whose partition lock lapsed: end it.
        SELECT l.lock_name, l.owner_id INTO e FROM batch_lock l
          JOIN batch_step_execution s ON s.lock_name = l.lock_name
          JOIN batch_job_execution x ON x.job_execution_id = s.job_execution_id
          JOIN batch_job_instance i ON i.job_instance_id = x.job_instance_id
         WHERE i.job_name = v_job AND s.partition_index IS NOT NULL AND NOT l.released
           AND l.locked_until < clock_timestamp()
           AND l.owner_backend_pid = h.pid AND l.owner_backend_start = h.backend_start
         LIMIT 1;
        IF FOUND THEN
            SELECT * INTO e FROM batch_lock_end_session(h.pid, h.backend_start);
            IF e.ended THEN
                verdict := 'claim';
                note := concat_ws('; ', note, e.note);
                CONTINUE;
            END IF;
        END IF;
        IF verdict <> 'claim' THEN
            verdict := 'wait';
        END IF;
        note := concat_ws('; ', note, format('session %s (%s)', h.pid,
            coalesce((SELECT nullif(a.application_name, '') FROM pg_stat_activity a
                       WHERE a.pid = h.pid), 'no application name')));
    END LOOP;
    IF verdict = 'done' AND NOT EXISTS (SELECT 1 FROM pg_locks k
         WHERE k.locktype = 'transactionid' AND k.transactionid::text = ANY (p_xids)) THEN
        -- No transaction holds them now: they were let go since the claim.
        verdict := 'claim';
    END IF;
END
$$;
