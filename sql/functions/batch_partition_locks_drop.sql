-- Remove the lock rows of the partitions among p_partitions that have ended
-- (their claimants' sessions already ended: see batch_partition_claimants_end).
-- A lock its claimant did not release gets an audit row saying why it went.
-- Returns the number of rows removed.
CREATE OR REPLACE FUNCTION batch_partition_locks_drop(p_partitions bigint[], p_why text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_n int;
BEGIN
    WITH d AS (
        DELETE FROM batch_lock b USING batch_step_execution x
         WHERE x.step_execution_id = ANY (p_partitions) AND x.partition_index IS NOT NULL
           AND NOT batch_status_is_live(x.status)
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
