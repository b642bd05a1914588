-- Release by the owner, keeping the lock until at least p_at_least_seconds
-- after it was taken (lock-at-least-for). The row stays: its token must grow.
CREATE OR REPLACE FUNCTION batch_lock_release(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint, p_at_least_seconds double precision, p_job_execution_id bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_lock
       SET locked_until = greatest(locked_at + make_interval(secs => p_at_least_seconds),
                                   batch_now()),
           updated_at = batch_now(), released = true
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
