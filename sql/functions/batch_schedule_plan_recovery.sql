-- Firing p_firing_id ended (p_cause: 'orphaned' its node is gone, 'finished'
-- its node saw the child end, 'stopping' the same while the node was
-- stopping): if its execution ended without finishing and its schedule
-- restarts, a restart is due after the schedule's delay; past the last
-- attempt, NOT_RECOVERED says so. An execution an operator stopped
-- (stop_origin OPERATOR, sql/017) is never restarted, however it ended
-- after the stop (STOPPED, still STOPPING when its node died, or buried
-- FAILED "owner lost"): NOT_RECOVERED says that too. Recorded as events of
-- node p_node.
-- An execution not restarted that still claims to run (its node died before
-- it ended) must still end, or it would claim to run for ever: it is due
-- again after the delay, and batch_schedule_take_recovery buries it once its
-- lease lets it (STOPPED for an operator's stop, FAILED past the attempts),
-- saying NOT_RECOVERED then. (Found by the simulator, tests/sim: an operator's
-- stop just before the node died left the execution STOPPING for ever.)
CREATE OR REPLACE FUNCTION batch_schedule_plan_recovery(p_firing_id bigint, p_node varchar, p_cause varchar)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
    s batch_schedule%ROWTYPE;
    e batch_job_execution%ROWTYPE;
    unfinished text;
BEGIN
    SELECT * INTO f FROM batch_schedule_firing x WHERE x.firing_id = p_firing_id;
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = f.schedule_id;
    IF NOT FOUND OR s.recover_policy <> 'RESTART' OR f.job_execution_id IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO e FROM batch_job_execution x WHERE x.job_execution_id = f.job_execution_id;
    IF batch_status_is_live(e.status) AND p_cause = 'orphaned' THEN
        unfinished := 'was ' || e.status || ' when its node was found gone';
    ELSIF e.status = 'STOPPED' AND p_cause IN ('orphaned', 'stopping') THEN
        unfinished := 'ended STOPPED by '
            || CASE WHEN e.stop_origin = 'OPERATOR' THEN 'an operator''s stop'
                    WHEN p_cause = 'orphaned' THEN 'its node''s death (the parent-death signal)'
                    ELSE 'its node''s stop' END;
    ELSIF e.status = 'FAILED' AND e.exit_message LIKE 'owner lost%' THEN
        unfinished := 'ended FAILED, its process gone: ' || left(e.exit_message, 200);
    ELSIF e.status = 'FAILED' AND e.exit_code = 'DATABASE_LOST' THEN
        -- include/cbatch/job.h CB_EXIT_CODE_DATABASE_LOST: not its input's fault
        unfinished := 'ended FAILED, its database lost beyond the outage budget: '
            || left(e.exit_message, 200);
    ELSE
        RETURN;
    END IF;
    IF (e.stop_origin = 'OPERATOR' OR f.attempt >= s.recover_attempts)
       AND batch_status_is_live(e.status) THEN
        UPDATE batch_schedule_firing x
           SET recover_after = batch_now() + s.recover_delay_seconds * interval '1 second'
         WHERE x.firing_id = p_firing_id;
        RETURN;
    END IF;
    IF e.stop_origin = 'OPERATOR' THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id, e.job_execution_id,
                f.attempt, 'execution ' || e.job_execution_id || ' ' || unfinished
                || '; not restarted: an operator stopped it (restart it by hand)');
        RETURN;
    END IF;
    IF f.attempt >= s.recover_attempts THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id, e.job_execution_id,
                f.attempt, 'execution ' || e.job_execution_id || ' ' || unfinished
                || '; not restarted: ' || f.attempt || ' of ' || s.recover_attempts
                || ' restart attempts made (restart it by hand)');
        RETURN;
    END IF;
    UPDATE batch_schedule_firing x
       SET recover_after = batch_now() + s.recover_delay_seconds * interval '1 second'
     WHERE x.firing_id = p_firing_id
    RETURNING * INTO f;
    INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                      job_execution_id, attempt, message)
    VALUES (f.schedule_id, f.fire_time, p_node, 'RECOVERY_DUE', f.firing_id, e.job_execution_id,
            f.attempt + 1, 'execution ' || e.job_execution_id || ' ' || unfinished
            || '; restart attempt ' || (f.attempt + 1) || ' of ' || s.recover_attempts
            || ' due at ' || f.recover_after || ', once its lease lets it');
END $$;
