-- Firings left open by nodes that are gone: their lease ran out, or they
-- stopped, or (p_dead_nodes) the caller saw that their process is gone.
-- Marked ORPHANED once, by whichever node gets there first, with the
-- execution they launched (if any), each with its recovery planned; only
-- those of schedule p_schedule_id unless it is NULL. Returns what it marked.
-- Gone is not batch_scheduler_node_live as the caller judges it (a silence
-- the caller shared is no sign of death, sql/023).
CREATE OR REPLACE FUNCTION batch_schedule_orphans_of(p_node varchar, p_dead_nodes varchar[],
    p_schedule_id bigint)
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, node_id varchar,
               job_execution_id bigint, exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    e record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id, f.fire_time, f.node_id
          FROM batch_schedule_firing f
         WHERE f.status IN ('CLAIMED', 'LAUNCHED') AND f.node_id <> p_node
           AND (p_schedule_id IS NULL OR f.schedule_id = p_schedule_id)
           AND (NOT batch_scheduler_node_live(f.node_id, p_node)
                OR f.node_id = ANY (coalesce(p_dead_nodes, '{}')))
         ORDER BY f.firing_id
         FOR UPDATE OF f SKIP LOCKED
    LOOP
        SELECT x.job_execution_id, x.status INTO e FROM batch_schedule_firing_execution(r.firing_id) x;
        UPDATE batch_schedule_firing x
           SET status = 'ORPHANED', job_execution_id = e.job_execution_id, exit_status = e.status,
               finished_at = batch_now(),
               message = 'node ' || r.node_id || ' is gone; '
                   || CASE WHEN e.job_execution_id IS NULL THEN 'it started no execution'
                           ELSE 'execution ' || e.job_execution_id || ' was ' || e.status END
         WHERE x.firing_id = r.firing_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, message)
        SELECT x.schedule_id, x.fire_time, p_node, 'ORPHANED', x.firing_id, x.job_execution_id,
               x.message
          FROM batch_schedule_firing x WHERE x.firing_id = r.firing_id;
        PERFORM batch_schedule_plan_recovery(r.firing_id, p_node, 'orphaned');
        firing_id := r.firing_id;
        schedule_id := r.schedule_id;
        fire_time := r.fire_time;
        node_id := r.node_id;
        job_execution_id := e.job_execution_id;
        exit_status := e.status;
        RETURN NEXT;
    END LOOP;
END $$;
