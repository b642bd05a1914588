-- Bury job execution p_job_execution_id, whose owner is gone (its lease ran
-- out, nobody holds its lock): as `stop` or `abandon` of a dead execution
-- and a restart's burial do, in one place for the paths written in SQL. Its
-- partitions' claimants' sessions end first, a manager step gets its
-- partitions' sums, its running steps end p_status with p_message, and the
-- execution ends p_status at its last sign of life, saying so; its partition
-- locks go. Only while it still claims to run, and (p_owner_id not NULL)
-- is still that owner's. Returns whether it buried it.
CREATE OR REPLACE FUNCTION batch_execution_bury(p_job_execution_id bigint, p_owner_id varchar,
    p_status varchar, p_message text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    last_sign timestamptz;
BEGIN
    SELECT batch_execution_last_sign(e.job_execution_id) INTO last_sign
      FROM batch_job_execution e
     WHERE e.job_execution_id = p_job_execution_id AND batch_status_is_live(e.status)
       AND (p_owner_id IS NULL OR e.owner_id = p_owner_id)
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- A frozen claimant's open chunk would block the steps' update below (a
    -- partition's chunk never locks this execution's row, so this order
    -- waits on nothing).
    PERFORM batch_execution_claimants_end(p_job_execution_id);
    PERFORM batch_partitions_summed(p_job_execution_id);
    UPDATE batch_step_execution s
       SET status = p_status, exit_code = p_status, exit_message = left(p_message, 2500),
           end_time = greatest(s.start_time, s.last_updated, last_sign),
           last_updated = batch_now(), version = s.version + 1
     WHERE s.job_execution_id = p_job_execution_id AND batch_status_is_live(s.status);
    UPDATE batch_job_execution e
       SET status = p_status, exit_code = p_status,
           exit_message = left(p_message || '; it ends at its last sign of life', 2500),
           end_time = last_sign, last_updated = batch_now(), version = e.version + 1
     WHERE e.job_execution_id = p_job_execution_id;
    PERFORM batch_execution_partition_locks_drop(p_job_execution_id,
                                                 'its execution was buried (owner lost)');
    RETURN true;
END $$;
