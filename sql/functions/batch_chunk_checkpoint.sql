-- The chunk checkpoint: one statement that the engine pipelines with the
-- chunk's writes and COMMIT. It raises (so the pipeline aborts and the COMMIT
-- is refused) instead of returning 0 rows, because in a pipeline a 0-row
-- answer is only read after COMMIT has already run.
--   CB001  the step execution's version is not the one this process holds
--   CB002  the execution lost its lock (fencing token no longer current)
--   CB003  the session running it is not the client's (p_session_pid,
--          p_session_start): checked in the same round trip as the chunk
-- The lock row records that verified session (a partition's claim records
-- the claimant's session unverified; its first chunk makes it verified).
-- A partition's chunk is fenced twice: by its own partition lock (p_lock_name)
-- and by the job lock its execution holds (batch_job_execution.lock_name,
-- fencing_token): once that lock is taken over or forced open, no partition of
-- the execution commits another chunk (CB002), whichever worker runs it.
-- A partition's chunk does not take the job execution's row lock: every
-- partition commits into the same job execution row, so taking its lock in
-- each checkpoint would queue their commits behind each other, and a restart
-- that buries a dead execution (steps, then the job row) would deadlock with
-- them. A partition reads the job's status without locking; its manager keeps
-- the execution's heartbeat.
-- The checkpoint's times (the lease's new start, updated_at, last_updated,
-- the heartbeat) are one instant, batch_now() read once as the call starts:
-- read in each statement instead, it is inlined (parsed) again whenever
-- PL/pgSQL plans that statement afresh (a custom plan), which cost the
-- checkpoint about 2% (bench/RESULTS.md, one clock). Reckoned from before
-- the lock row's UPDATE, the lease can only come out shorter, by the time
-- that UPDATE waited.
-- The step execution's row is taken by its key and its version compared
-- after: a condition on the version in the UPDATE's WHERE would skip a row
-- that another transaction is changing without waiting for it, so the second
-- connection of a run (chunk.connections = 2), whose chunk N+1 checkpoints
-- while chunk N's COMMIT is in flight, would fail where it must wait and then
-- find N's version. A second connection passes p_owner => false: its session
-- is checked, the lock keeps recording the run's first session as the owner's.
-- Returns the job execution's status, so a `stop` request is seen for free.
-- Called with named arguments (repository/steps.c): a parameter renamed or
-- removed here fails there at once.
CREATE OR REPLACE FUNCTION batch_chunk_checkpoint(
    p_step_execution_id bigint, p_version bigint,
    p_read bigint, p_write bigint, p_filter bigint, p_commit bigint,
    p_read_skip bigint, p_write_skip bigint, p_process_skip bigint, p_duplicate bigint,
    p_context jsonb, p_job_execution_id bigint, p_job_context jsonb,
    p_lock_name varchar, p_fencing_token bigint, p_lease_seconds double precision,
    p_session_pid int DEFAULT NULL, p_session_start timestamptz DEFAULT NULL,
    p_owner boolean DEFAULT true)
RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar;
    v_partition int;
    v_job_lock varchar;
    v_job_token bigint;
    v_now timestamptz;
    v_version bigint;
BEGIN
    PERFORM batch_session_check(p_session_pid, p_session_start);
    v_now := batch_now();
    IF p_lock_name IS NOT NULL THEN
        UPDATE batch_lock
           SET locked_until = greatest(locked_until,
                   v_now + make_interval(secs => p_lease_seconds)),
               updated_at = v_now,
               owner_backend_pid = CASE WHEN p_owner THEN coalesce(p_session_pid, owner_backend_pid)
                                        ELSE owner_backend_pid END,
               owner_backend_start = CASE WHEN p_session_pid IS NULL OR NOT p_owner
                                          THEN owner_backend_start
                                          ELSE p_session_start END
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
           last_updated = v_now
     WHERE step_execution_id = p_step_execution_id
    RETURNING partition_index, version INTO v_partition, v_version;
    IF NOT FOUND OR v_version <> p_version + 1 THEN
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
        SELECT e.status, e.lock_name, e.fencing_token INTO v_status, v_job_lock, v_job_token
          FROM batch_job_execution e WHERE e.job_execution_id = p_job_execution_id;
        -- A plain read of the job lock row (the manager's heartbeat updates
        -- it; a row lock here would queue the partitions behind it). A forced
        -- unlock or a takeover also ends the claimants' sessions, so a chunk
        -- in flight past this read cannot commit either.
        IF v_job_lock IS NOT NULL AND NOT EXISTS (
               SELECT 1 FROM batch_lock b
                WHERE b.lock_name = v_job_lock AND b.fencing_token = v_job_token
                  AND NOT b.released) THEN
            RAISE EXCEPTION 'fenced off: job execution % no longer holds its lock "%" (fencing token %)',
                p_job_execution_id, v_job_lock, v_job_token USING ERRCODE = 'CB002';
        END IF;
    ELSE
        UPDATE batch_job_execution SET last_updated = v_now,
               heartbeat_time = v_now
         WHERE job_execution_id = p_job_execution_id
         RETURNING status INTO v_status;
    END IF;
    RETURN v_status;
END
$$;
