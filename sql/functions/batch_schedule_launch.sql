-- The compare-and-set before a launch: firing p_firing_id becomes LAUNCHED
-- with child p_pid (which waits for the answer before it execs) only if it
-- is still node p_node's, still CLAIMED, and node p_node's own lease holds
-- (when it has run out, the other nodes no longer count its claim as live,
-- batch_schedule_live_firing, so launching it could overlap what they
-- launched meanwhile: such a claim ends FAILED_TO_LAUNCH). Otherwise nothing
-- is changed but an event saying why nothing was launched; the answer is
-- false and firing_state says what the firing is now (its status, and who
-- has it or reported it). A restart's launch is recorded RESTARTED with its
-- attempt. Asked again by the same node for the same child (its first
-- answer lost), it says launched again and records nothing.
CREATE OR REPLACE FUNCTION batch_schedule_launch(p_firing_id bigint, p_node varchar, p_pid int,
    p_message varchar, OUT launched boolean, OUT firing_state varchar)
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
    reporter varchar;
    attempts int;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = 'LAUNCHED', pid = p_pid, message = coalesce(p_message, '')
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
       AND batch_scheduler_node_live(p_node, p_node)
    RETURNING * INTO f;
    launched := FOUND;
    IF launched THEN
        firing_state := 'LAUNCHED';
        SELECT b.recover_attempts INTO attempts FROM batch_schedule b
         WHERE b.schedule_id = f.schedule_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node,
                CASE WHEN f.attempt > 0 THEN 'RESTARTED' ELSE 'FIRED' END, f.firing_id,
                CASE WHEN f.attempt > 0 THEN f.job_execution_id END,
                CASE WHEN f.attempt > 0 THEN f.attempt END,
                CASE WHEN f.attempt > 0 THEN 'restart attempt ' || f.attempt || ' of '
                     || attempts || ' of execution ' || f.job_execution_id || ': ' ELSE '' END
                || coalesce(p_message, ''));
        RETURN;
    END IF;
    -- Asked again for the same child after the answer was lost with the
    -- node's session (a switchover): its own confirmation went through.
    PERFORM 1 FROM batch_schedule_firing x
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'LAUNCHED'
       AND x.pid = p_pid;
    IF FOUND THEN
        launched := true;
        firing_state := 'LAUNCHED';
        RETURN;
    END IF;
    UPDATE batch_schedule_firing x
       SET status = 'FAILED_TO_LAUNCH', finished_at = batch_now(),
           message = 'not launched: this node''s lease ran out between its claim and its launch'
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
    RETURNING * INTO f;
    IF FOUND THEN
        firing_state := 'claimed by this node after its lease ran out';
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FAILED_TO_LAUNCH', f.firing_id, f.message);
        RETURN;
    END IF;
    SELECT * INTO f FROM batch_schedule_firing x WHERE x.firing_id = p_firing_id;
    IF NOT FOUND THEN
        firing_state := 'gone (its schedule was removed)';
        RETURN;
    END IF;
    IF f.status = 'ORPHANED' THEN
        SELECT e.node_id INTO reporter FROM batch_schedule_event e
         WHERE e.firing_id = p_firing_id AND e.outcome = 'ORPHANED'
         ORDER BY e.event_id DESC LIMIT 1;
    END IF;
    firing_state := f.status
        || CASE WHEN f.node_id <> p_node THEN ', claimed by node ' || f.node_id ELSE '' END
        || CASE WHEN reporter IS NOT NULL THEN ' by node ' || reporter ELSE '' END;
    INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
    VALUES (f.schedule_id, f.fire_time, p_node, 'FAILED_TO_LAUNCH', f.firing_id,
            'not launched: the firing is ' || firing_state || ', no longer this node''s claim '
            || '(the node stalled between its claim and its launch)');
END $$;
