-- A step's counts, counted once it has ended; a manager step's counts are
-- the sums of its partitions' (which count themselves), so it counts nothing.
CREATE OR REPLACE FUNCTION batch_step_counted(p_step_execution_id bigint, p_manager boolean)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce(p_manager, false) AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
        WHERE w.manager_step_execution_id = p_step_execution_id)
$$;
