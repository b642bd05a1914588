-- Queued firings of jobs p_jobs, oldest first (fire instant, then firing),
-- the schedule's own (QUEUE, fire now) before its backfill's (BACKFILL, sql/020:
-- the present before the past): each becomes CLAIMED by node p_node (under the
-- schedule's row lock, as a claim), with its own instant and parameters, to
-- be launched as a claim is.
-- Under overlap SKIP and QUEUE only the first queued firing of a schedule is
-- taken, and only while no firing of it is live (batch_schedule_live_firing:
-- a queued one is not), so the next one waits until it has ended: a backfill
-- runs one instant at a time, never beside another firing of the schedule.
-- Under ALLOW every queued firing is taken but a backfill's: those go in
-- order, at most backfill_parallel of them live at once. A claimed_at of now,
-- so that its execution is told from earlier ones.
CREATE OR REPLACE FUNCTION batch_schedule_take_queued(p_node varchar, p_jobs varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, job_name varchar,
               parameters jsonb, kind varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    s batch_schedule%ROWTYPE;
    live record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id, f.fire_time, f.kind = 'BACKFILL' AS backfill,
               coalesce(f.backfill_parallel, 1) AS parallel
          FROM batch_schedule_firing f
         WHERE f.status = 'QUEUED' AND f.job_name = ANY (p_jobs)
         ORDER BY f.kind = 'BACKFILL', f.fire_time, f.firing_id
    LOOP
        -- A schedule being claimed is left for the next tick: never a wait.
        SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = r.schedule_id AND NOT x.paused
           FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        IF s.overlap_policy <> 'ALLOW' THEN
            -- An older one still queued goes first.
            CONTINUE WHEN EXISTS (
                SELECT 1 FROM batch_schedule_firing q
                 WHERE q.schedule_id = r.schedule_id AND q.status = 'QUEUED'
                   AND (q.kind = 'BACKFILL', q.fire_time, q.firing_id)
                       < (r.backfill, r.fire_time, r.firing_id));
            PERFORM 1 FROM batch_schedule_orphans_of(p_node, NULL, r.schedule_id);
            SELECT * INTO live FROM batch_schedule_live_firing(r.schedule_id, r.firing_id, p_node);
            CONTINUE WHEN live.firing_id IS NOT NULL;
        ELSIF r.backfill THEN
            CONTINUE WHEN EXISTS (
                SELECT 1 FROM batch_schedule_firing q
                 WHERE q.schedule_id = r.schedule_id AND q.status = 'QUEUED'
                   AND q.kind = 'BACKFILL' AND (q.fire_time, q.firing_id)
                       < (r.fire_time, r.firing_id));
            PERFORM 1 FROM batch_schedule_orphans_of(p_node, NULL, r.schedule_id);
            CONTINUE WHEN (SELECT count(*) FROM batch_schedule_live_firings(r.schedule_id, p_node) l
                            WHERE l.kind = 'BACKFILL') >= r.parallel;
        END IF;
        RETURN QUERY
        UPDATE batch_schedule_firing x
           SET status = 'CLAIMED', node_id = p_node, claimed_at = batch_now(),
               message = ''
         WHERE x.firing_id = r.firing_id AND x.status = 'QUEUED'
        RETURNING x.firing_id, x.schedule_id, x.fire_time, x.job_name, x.parameters, x.kind;
    END LOOP;
END $$;
