-- Before an execution is buried (its owner lost: a restart, `stop`, `abandon`):
-- end the sessions of every claimant of its open partitions, live or not
-- (the burial fences them all; a frozen one holds rows the next run needs).
CREATE OR REPLACE FUNCTION batch_execution_claimants_end(p_job_execution_id bigint)
RETURNS text LANGUAGE sql AS $$
    SELECT batch_partition_claimants_end(array(
        SELECT x.step_execution_id FROM batch_step_execution x
         WHERE x.job_execution_id = p_job_execution_id AND x.partition_index IS NOT NULL
           AND batch_status_is_live(x.status)), false)
$$;
