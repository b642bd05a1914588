-- The child of a launched firing has exited with p_exit_code. p_stopping:
-- the node was stopping, and asked its children to stop. The recovery of
-- the firing is then planned (batch_schedule_plan_recovery).
CREATE OR REPLACE FUNCTION batch_schedule_finished(p_firing_id bigint, p_node varchar, p_exit_code int,
    p_message varchar, p_stopping boolean,
    OUT job_execution_id bigint, OUT exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    SELECT x.job_execution_id, x.status INTO job_execution_id, exit_status
      FROM batch_schedule_firing_execution(p_firing_id) x;
    UPDATE batch_schedule_firing x
       SET status = 'FINISHED', exit_code = p_exit_code, job_execution_id = job_execution_id,
           exit_status = exit_status, message = coalesce(p_message, ''),
           finished_at = batch_now()
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node
       AND x.status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED')
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FINISHED', f.firing_id, job_execution_id,
                nullif(f.attempt, 0), coalesce(p_message, ''));
        -- An ORPHANED firing's restart may be due already: planned once.
        IF f.recover_after IS NULL THEN
            PERFORM batch_schedule_plan_recovery(p_firing_id, p_node,
                CASE WHEN p_stopping THEN 'stopping' ELSE 'finished' END);
        END IF;
    END IF;
END $$;
