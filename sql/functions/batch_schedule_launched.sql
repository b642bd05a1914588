-- The launch of a claimed firing failed: FAILED_TO_LAUNCH with the reason.
-- Also from LAUNCHED when p_pid is NULL: the claim was confirmed
-- (batch_schedule_launch) but the exec then failed, so nothing ran.
-- With a pid, as before: CLAIMED -> LAUNCHED.
CREATE OR REPLACE FUNCTION batch_schedule_launched(p_firing_id bigint, p_node varchar,
    p_pid int, p_message varchar) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'LAUNCHED' END,
           pid = coalesce(p_pid, x.pid), message = coalesce(p_message, ''),
           finished_at = CASE WHEN p_pid IS NULL THEN batch_now() END
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node
       AND (x.status = 'CLAIMED' OR (p_pid IS NULL AND x.status = 'LAUNCHED'))
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node,
                CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'FIRED' END, f.firing_id,
                coalesce(p_message, ''));
    END IF;
END $$;
