-- Whether execution p_exec runs under a lock whose lease holds: the same test
-- as `show`'s owner_lost, the other way round.
CREATE OR REPLACE FUNCTION batch_schedule_execution_live(p_exec bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM batch_job_execution e
          JOIN batch_lock l ON l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token
         WHERE e.job_execution_id = p_exec AND batch_status_is_live(e.status)
           AND batch_lock_is_held(l.released, l.locked_until))
$$;
