-- The owners of running executions with open partitions on one host (owner
-- ids starting with p_host || ':'): a worker checks which of them are dead
-- processes of its own host before it claims.
CREATE OR REPLACE FUNCTION batch_partition_managers(p_host varchar)
RETURNS SETOF varchar LANGUAGE sql STABLE AS $$
    SELECT DISTINCT e.owner_id FROM batch_step_execution x
      JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id
     WHERE x.partition_index IS NOT NULL AND x.status IN ('STARTING', 'STARTED')
       AND e.status = 'STARTED'
       AND left(e.owner_id, length(p_host) + 1) = p_host || ':'
$$;
