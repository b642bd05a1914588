-- The orphans of every schedule (batch_schedule_orphans_of).
CREATE OR REPLACE FUNCTION batch_schedule_orphans(p_node varchar, p_dead_nodes varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, node_id varchar,
               job_execution_id bigint, exit_status varchar)
LANGUAGE sql AS $$
    SELECT * FROM batch_schedule_orphans_of(p_node, p_dead_nodes, NULL)
$$;
