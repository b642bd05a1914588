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
-- A partition's chunk does not take the job execution's row lock: every
-- partition commits into the same job execution row, so taking its lock in
-- each checkpoint would queue their commits behind each other, and a restart
-- that buries a dead execution (steps, then the job row) would deadlock with
-- them. A partition reads the job's status without locking; its manager keeps
-- the execution's heartbeat.
-- Returns the job execution's status, so a `stop` request is seen for free.
-- Called with named arguments (repository/steps.c): a parameter renamed or
-- removed here fails there at once.
CREATE OR REPLACE FUNCTION batch_chunk_checkpoint(
    p_step_execution_id bigint, p_version bigint,
    p_read bigint, p_write bigint, p_filter bigint, p_commit bigint,
    p_read_skip bigint, p_write_skip bigint, p_process_skip bigint, p_duplicate bigint,
    p_context jsonb, p_job_execution_id bigint, p_job_context jsonb,
    p_lock_name varchar, p_fencing_token bigint, p_lease_seconds double precision,
    p_session_pid int DEFAULT NULL, p_session_start timestamptz DEFAULT NULL)
RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar;
    v_partition int;
BEGIN
    PERFORM batch_session_check(p_session_pid, p_session_start);
    IF p_lock_name IS NOT NULL THEN
        UPDATE batch_lock
           SET locked_until = greatest(locked_until,
                   batch_now() + make_interval(secs => p_lease_seconds)),
               updated_at = batch_now(),
               owner_backend_pid = coalesce(p_session_pid, owner_backend_pid),
               owner_backend_start = CASE WHEN p_session_pid IS NULL THEN owner_backend_start
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
           last_updated = batch_now()
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
        UPDATE batch_job_execution SET last_updated = batch_now(),
               heartbeat_time = batch_now()
         WHERE job_execution_id = p_job_execution_id
         RETURNING status INTO v_status;
    END IF;
    RETURN v_status;
END
$$;
