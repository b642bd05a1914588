-- The child of firing p_firing_id (of node p_node) has exited while its
-- execution p_job_execution_id still claims to run, owned by p_owner_id: a
-- process the node has reaped, so provably dead. The caller holds the
-- execution's lock (a dead-owner takeover), so no restart runs meanwhile.
-- Its running steps and the execution end FAILED at their last sign of
-- life, with p_message; only if the owner is still p_owner_id and the
-- execution still runs. Returns whether it buried it.
CREATE OR REPLACE FUNCTION batch_schedule_bury(p_firing_id bigint, p_node varchar,
    p_job_execution_id bigint, p_owner_id varchar, p_message varchar) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    last_sign timestamptz;
BEGIN
    PERFORM 1 FROM batch_schedule_firing f
     WHERE f.firing_id = p_firing_id AND f.node_id = p_node;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Its last sign of life, as every other burial reckons it.
    SELECT least(batch_now(), greatest(e.heartbeat_time, e.last_updated))
      INTO last_sign
      FROM batch_job_execution e
     WHERE e.job_execution_id = p_job_execution_id AND e.owner_id = p_owner_id
       AND batch_status_is_live(e.status)
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE batch_step_execution s
       SET status = 'FAILED', exit_code = 'FAILED', exit_message = left(p_message, 2500),
           end_time = greatest(s.start_time, s.last_updated, last_sign),
           last_updated = batch_now(), version = s.version + 1
     WHERE s.job_execution_id = p_job_execution_id
       AND batch_status_is_live(s.status);
    UPDATE batch_job_execution e
       SET status = 'FAILED', exit_code = 'FAILED', exit_message = left(p_message, 2500),
           end_time = last_sign, last_updated = batch_now(), version = e.version + 1
     WHERE e.job_execution_id = p_job_execution_id;
    RETURN true;
END $$;
