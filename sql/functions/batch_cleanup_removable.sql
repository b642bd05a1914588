-- What cleanup may remove, execution by execution (last_of_instance: the
-- instance goes with it, all of its executions going too). An execution
-- that ended before p_cutoff may go unless
--  - it is one of p_protected (what `run --next` reads);
--  - its instance has a live execution (a running restart reads its
--    earlier executions' steps, start counts and partitions);
--  - its instance's newest execution is not COMPLETED or ABANDONED (a
--    restart reads the whole instance);
--  - its job is one of p_keep_names and its id is not below the job's
--    p_keep_first (the N newest of each job, `--keep-last`);
--  - it is its instance's newest and another execution of the instance
--    stays (a COMPLETED instance never turns into a FAILED one).
CREATE OR REPLACE FUNCTION batch_cleanup_removable(p_cutoff timestamptz,
    p_keep_names text[] DEFAULT '{}', p_keep_first bigint[] DEFAULT '{}',
    p_protected bigint[] DEFAULT '{}')
RETURNS TABLE (job_execution_id bigint, job_instance_id bigint, end_time timestamptz,
               last_of_instance boolean)
LANGUAGE sql STABLE AS $$
SELECT e.job_execution_id, e.job_instance_id, e.end_time,
       NOT EXISTS (SELECT 1 FROM batch_job_execution o
                    WHERE o.job_instance_id = e.job_instance_id
                      AND o.job_execution_id > e.job_execution_id)
  FROM batch_job_execution e
 WHERE e.end_time < p_cutoff
   AND NOT batch_status_is_live(e.status)
   AND NOT (e.job_execution_id = ANY (p_protected))
   AND NOT EXISTS (SELECT 1 FROM batch_job_execution v
                    WHERE v.job_instance_id = e.job_instance_id
                      AND batch_status_is_live(v.status))
   AND (SELECT n.status FROM batch_job_execution n
         WHERE n.job_instance_id = e.job_instance_id
         ORDER BY n.job_execution_id DESC LIMIT 1) IN ('COMPLETED', 'ABANDONED')
   AND NOT EXISTS (SELECT 1 FROM unnest(p_keep_names, p_keep_first) AS k(job_name, first_kept)
                     JOIN batch_job_instance ki ON ki.job_name = k.job_name
                    WHERE ki.job_instance_id = e.job_instance_id
                      AND e.job_execution_id >= k.first_kept)
   -- (the others of the instance pass the rule above but for their own end
   -- and protection: they share the instance and have smaller ids)
   AND (EXISTS (SELECT 1 FROM batch_job_execution o
                 WHERE o.job_instance_id = e.job_instance_id
                   AND o.job_execution_id > e.job_execution_id)
        OR NOT EXISTS (SELECT 1 FROM batch_job_execution o
                        WHERE o.job_instance_id = e.job_instance_id
                          AND o.job_execution_id <> e.job_execution_id
                          AND (o.end_time IS NULL OR o.end_time >= p_cutoff
                               OR o.job_execution_id = ANY (p_protected))))
$$;
