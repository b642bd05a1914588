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
BEGIN
    PERFORM 1 FROM batch_schedule_firing f
     WHERE f.firing_id = p_firing_id AND f.node_id = p_node;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- As every other burial: at its last sign of life, its partitions' sums.
    RETURN batch_execution_bury(p_job_execution_id, p_owner_id, 'FAILED', p_message);
END $$;
