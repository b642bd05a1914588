-- Queued firings of jobs p_jobs whose schedule has no live firing left: each
-- becomes CLAIMED by node p_node (under the schedule's row lock, as a claim),
-- with its own instant and parameters, to be launched as a claim is. A
-- claimed_at of now, so that its execution is told from earlier ones.
CREATE OR REPLACE FUNCTION batch_schedule_take_queued(p_node varchar, p_jobs varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, job_name varchar,
               parameters jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    live record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id FROM batch_schedule_firing f
         WHERE f.status = 'QUEUED' AND f.job_name = ANY (p_jobs)
         ORDER BY f.fire_time
    LOOP
        -- A schedule being claimed is left for the next tick: never a wait.
        PERFORM 1 FROM batch_schedule x WHERE x.schedule_id = r.schedule_id AND NOT x.paused
           FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        PERFORM 1 FROM batch_schedule_orphans_of(p_node, NULL, r.schedule_id);
        SELECT * INTO live FROM batch_schedule_live_firing(r.schedule_id, r.firing_id);
        CONTINUE WHEN live.firing_id IS NOT NULL;
        RETURN QUERY
        UPDATE batch_schedule_firing x
           SET status = 'CLAIMED', node_id = p_node, claimed_at = clock_timestamp(),
               message = ''
         WHERE x.firing_id = r.firing_id AND x.status = 'QUEUED'
        RETURNING x.firing_id, x.schedule_id, x.fire_time, x.job_name, x.parameters;
    END LOOP;
END $$;
