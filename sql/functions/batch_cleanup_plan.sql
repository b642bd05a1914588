-- The state a cleanup is judged by, fixed when it starts: the cutoff in the
-- database's clock; with p_keep_last > 0, the job names and the first of
-- their N newest executions that stay (this one reads every execution, so
-- only when asked for); and the executions `run --next` reads: the first
-- of each job's newest instance. (--next counts run.id on from
-- batch_job_summary.max_run_id, a high-water mark: the execution holding
-- the largest run.id need not stay for it.)
CREATE OR REPLACE FUNCTION batch_cleanup_plan(p_older_than interval, p_keep_last bigint DEFAULT 0)
RETURNS TABLE (cutoff timestamptz, keep_names text[], keep_first bigint[],
               protected_ids bigint[])
-- (no JIT: the keep-last part, planned whether asked for or not, looks
-- costly enough to compile the whole, which costs more than the rest)
LANGUAGE sql VOLATILE SET jit = off AS $$
WITH k AS (SELECT x.job_name, min(x.job_execution_id) AS first_kept FROM (
             SELECT i.job_name, e.job_execution_id, row_number() OVER (
                    PARTITION BY i.job_name ORDER BY e.job_execution_id DESC) AS rn
               FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id)
              WHERE p_keep_last > 0) x
            WHERE x.rn <= p_keep_last GROUP BY x.job_name),
     f AS (SELECT (SELECT min(e.job_execution_id) FROM batch_job_execution e
                    WHERE e.job_instance_id = (SELECT max(i.job_instance_id)
                                                 FROM batch_job_instance i
                                                WHERE i.job_name = s.job_name)) AS id
             FROM batch_job_summary s)
SELECT batch_now() - p_older_than,
       coalesce((SELECT array_agg(k.job_name::text ORDER BY k.job_name) FROM k), '{}'),
       coalesce((SELECT array_agg(k.first_kept ORDER BY k.job_name) FROM k), '{}'),
       coalesce((SELECT array_agg(DISTINCT f.id) FROM f WHERE f.id IS NOT NULL), '{}')
$$;
