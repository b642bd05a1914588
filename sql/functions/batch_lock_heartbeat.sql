-- Extend the lease if we still own it (owner and token). False: the lock is lost.
CREATE OR REPLACE FUNCTION batch_lock_heartbeat(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint, p_lease_seconds double precision, p_job_execution_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_lock
       SET locked_until = greatest(locked_until,
               batch_now() + make_interval(secs => p_lease_seconds)),
           updated_at = batch_now()
     WHERE lock_name = p_lock_name AND owner_id = p_owner_id
       AND fencing_token = p_fencing_token AND NOT released;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE batch_job_execution SET heartbeat_time = batch_now()
     WHERE job_execution_id = p_job_execution_id;
    RETURN true;
END
$$;
