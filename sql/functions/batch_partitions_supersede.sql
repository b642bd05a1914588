-- A new execution of job instance p_job_instance_id is about to make the
-- partitions of step p_manager anew: partitions of earlier executions that
-- still have a lock row (ended by a path that left it: an older version, a
-- burial that could not remove it) are superseded. Their claimants' sessions
-- end, then their lock rows go. Returns the number of rows removed.
CREATE OR REPLACE FUNCTION batch_partitions_supersede(p_job_instance_id bigint, p_manager varchar)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[];
BEGIN
    SELECT array_agg(x.step_execution_id) INTO v_ids
      FROM batch_step_execution x
      JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id
      JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id
      JOIN batch_lock b ON b.lock_name = x.lock_name
     WHERE e.job_instance_id = p_job_instance_id AND m.step_name = p_manager
       AND NOT batch_status_is_live(x.status);
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM batch_partition_claimants_end(v_ids, false);
    RETURN batch_partition_locks_drop(v_ids, 'superseded by a new execution');
END
$$;
