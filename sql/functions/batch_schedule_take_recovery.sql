-- Firings of jobs p_jobs whose restart is due and whose execution is dead
-- (ended, or its lease ran out) become CLAIMED by node p_node with one more
-- attempt, to be launched as `restart EXECUTION`. Under the schedule's row
-- lock (a claim's) and the firing's, skipping either when locked, so that
-- one node takes each. An execution that has meanwhile completed (a restart
-- by hand) or been abandoned needs none, nor one an operator has stopped
-- meanwhile (stop_origin OPERATOR, sql/017: e.g. `stop` of the dead
-- execution while its restart was due): NOT_RECOVERED says so. One that
-- still claims to run and will not be restarted (an operator's stop, or the
-- attempts are spent) is buried once its lease lets it, STOPPED or FAILED
-- (batch_execution_bury), and NOT_RECOVERED says that.
CREATE OR REPLACE FUNCTION batch_schedule_take_recovery(p_node varchar, p_jobs varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, job_name varchar,
               job_execution_id bigint, attempt int, attempts int)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    s batch_schedule%ROWTYPE;
    x record;
    live record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id, f.attempt FROM batch_schedule_firing f
         WHERE f.recover_after <= batch_now() AND f.job_name = ANY (p_jobs)
         ORDER BY f.recover_after
    LOOP
        SELECT * INTO s FROM batch_schedule b WHERE b.schedule_id = r.schedule_id AND NOT b.paused
           FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        PERFORM 1 FROM batch_schedule_firing f
         WHERE f.firing_id = r.firing_id AND f.recover_after <= batch_now()
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        SELECT e.job_execution_id, e.status, j.stop_origin INTO x
          FROM batch_schedule_firing_execution(r.firing_id) e
          LEFT JOIN batch_job_execution j ON j.job_execution_id = e.job_execution_id;
        IF x.job_execution_id IS NOT NULL AND batch_status_is_live(x.status)
           AND (x.stop_origin = 'OPERATOR' OR r.attempt >= s.recover_attempts) THEN
            -- Not restarted, but it must end: once it is dead.
            CONTINUE WHEN batch_schedule_execution_live(x.job_execution_id);
            PERFORM batch_execution_bury(x.job_execution_id, NULL,
                CASE WHEN x.stop_origin = 'OPERATOR' THEN 'STOPPED' ELSE 'FAILED' END,
                CASE WHEN x.stop_origin = 'OPERATOR' THEN 'owner lost; stopped by operator'
                     ELSE 'owner lost; its restarts are spent' END);
            SELECT e.job_execution_id, e.status, j.stop_origin INTO x
              FROM batch_schedule_firing_execution(r.firing_id) e
              LEFT JOIN batch_job_execution j ON j.job_execution_id = e.job_execution_id;
            UPDATE batch_schedule_firing f SET recover_after = NULL WHERE f.firing_id = r.firing_id;
            INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                              job_execution_id, attempt, message)
            SELECT f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id,
                   x.job_execution_id, f.attempt,
                   'execution ' || x.job_execution_id || ' ended ' || x.status
                   || ', its node gone; not restarted: '
                   || CASE WHEN x.stop_origin = 'OPERATOR'
                           THEN 'an operator stopped it (restart it by hand)'
                           ELSE f.attempt || ' of ' || s.recover_attempts
                                || ' restart attempts made (restart it by hand)' END
              FROM batch_schedule_firing f WHERE f.firing_id = r.firing_id;
            CONTINUE;
        END IF;
        IF x.job_execution_id IS NULL OR x.status IN ('COMPLETED', 'ABANDONED')
           OR x.stop_origin = 'OPERATOR' THEN
            UPDATE batch_schedule_firing f SET recover_after = NULL WHERE f.firing_id = r.firing_id;
            INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                              job_execution_id, message)
            SELECT f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id,
                   x.job_execution_id, CASE WHEN x.stop_origin = 'OPERATOR'
                       THEN 'execution ' || x.job_execution_id || ' is ' || x.status
                            || '; not restarted: an operator stopped it (restart it by hand)'
                       ELSE 'no restart needed: execution '
                            || coalesce(x.job_execution_id::text, '(none)') || ' is '
                            || coalesce(x.status, 'gone') END
              FROM batch_schedule_firing f WHERE f.firing_id = r.firing_id;
            CONTINUE;
        END IF;
        -- Not before it is dead: its lease decides, on any node.
        CONTINUE WHEN batch_schedule_execution_live(x.job_execution_id);
        IF s.overlap_policy <> 'ALLOW' THEN
            SELECT * INTO live FROM batch_schedule_live_firing(r.schedule_id, r.firing_id, p_node);
            CONTINUE WHEN live.firing_id IS NOT NULL;
        END IF;
        RETURN QUERY
        UPDATE batch_schedule_firing f
           SET status = 'CLAIMED', node_id = p_node, attempt = f.attempt + 1,
               recover_after = NULL, job_execution_id = x.job_execution_id, pid = NULL,
               exit_code = NULL, exit_status = NULL, finished_at = NULL,
               message = 'restart attempt ' || (f.attempt + 1) || ' of ' || s.recover_attempts
                   || ' of execution ' || x.job_execution_id
         WHERE f.firing_id = r.firing_id
        RETURNING f.firing_id, f.schedule_id, f.fire_time, f.job_name, x.job_execution_id,
                  f.attempt, s.recover_attempts;
    END LOOP;
END $$;
