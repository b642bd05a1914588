-- After the burial: the lock rows of its ended partitions go.
CREATE OR REPLACE FUNCTION batch_execution_partition_locks_drop(p_job_execution_id bigint, p_why text)
RETURNS int LANGUAGE sql AS $$
    SELECT batch_partition_locks_drop(array(
        SELECT x.step_execution_id FROM batch_step_execution x
         WHERE x.job_execution_id = p_job_execution_id AND x.partition_index IS NOT NULL),
        p_why)
$$;
