-- End a claimed partition: only while it still carries the caller's fencing
-- token (a fenced owner cannot end the partition its successor runs).
-- p_status 'STARTING' hands it back unfinished (a worker asked to stop): the
-- next claimant resumes it from its committed context, and its lock row
-- stays (the next claimant's token must grow from it). The partition lock is
-- released either way (which audits it), and the managers and workers are
-- woken; a partition that ends (not handed back) then loses its lock row: its
-- name is never claimed again. False: the partition was no longer this
-- owner's.
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
           end_time = CASE WHEN p_status = 'STARTING' THEN NULL ELSE batch_now() END,
           last_updated = batch_now(), version = x.version + 1
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
