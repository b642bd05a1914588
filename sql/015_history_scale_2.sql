-- 015: history at scale, the last misses (issue 20).
--
-- Cleanup starts without reading the history and walks only what it removes:
--  - batch_cleanup_removable() is its removal rule, one function that can be
--    tried in psql, e.g.
--      SELECT r.* FROM batch_cleanup_plan(interval '30 days') p,
--             batch_cleanup_removable(p.cutoff, p.keep_names, p.keep_first,
--                                     p.protected_ids) r LIMIT 20;
--    It is a plain SQL query (inlined into the statement that calls it), so
--    a caller's range and order on end_time reach the index below.
--  - batch_cleanup_plan() fixes what every batch is judged by when a cleanup
--    starts: the cutoff and what is kept whatever its age. It reads a few
--    rows per job name (batch_job_summary), not the history.
--  - Executions are walked in end_time order through their own index, from
--    the oldest to the cutoff: never past the cutoff into the newer history.
--  - The lock audit rows of an execution go with it, found through an index
--    on the execution: the audit is not walked as a whole.

CREATE INDEX batch_job_execution_end_ix ON batch_job_execution (end_time, job_execution_id)
    WHERE end_time IS NOT NULL;
CREATE INDEX batch_lock_audit_execution_ix ON batch_lock_audit (job_execution_id)
    WHERE job_execution_id IS NOT NULL;

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
CREATE FUNCTION batch_cleanup_removable(p_cutoff timestamptz,
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
   AND e.status NOT IN ('STARTING', 'STARTED', 'STOPPING')
   AND NOT (e.job_execution_id = ANY (p_protected))
   AND NOT EXISTS (SELECT 1 FROM batch_job_execution v
                    WHERE v.job_instance_id = e.job_instance_id
                      AND v.status IN ('STARTING', 'STARTED', 'STOPPING'))
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

-- The state a cleanup is judged by, fixed when it starts: the cutoff in the
-- database's clock; with p_keep_last > 0, the job names and the first of
-- their N newest executions that stay (this one reads every execution, so
-- only when asked for); and the executions `run --next` reads: the first
-- of each job's newest instance. (--next counts run.id on from
-- batch_job_summary.max_run_id, a high-water mark: the execution holding
-- the largest run.id need not stay for it.)
CREATE FUNCTION batch_cleanup_plan(p_older_than interval, p_keep_last bigint DEFAULT 0)
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
SELECT clock_timestamp() - p_older_than,
       coalesce((SELECT array_agg(k.job_name::text ORDER BY k.job_name) FROM k), '{}'),
       coalesce((SELECT array_agg(k.first_kept ORDER BY k.job_name) FROM k), '{}'),
       coalesce((SELECT array_agg(DISTINCT f.id) FROM f WHERE f.id IS NOT NULL), '{}')
$$;

-- Executions of a rare (job, status) pair, newest first, read by walking the
-- status's executions newest first and keeping its job's: the instance of
-- each comes with the key (an index-only walk, no visit of every execution
-- of that status to learn its instance), and the job of each instance from
-- batch_job_instance_name_ix (index-only too). Only the rows shown are read.
CREATE INDEX batch_job_execution_status_inst_ix ON batch_job_execution (status, job_execution_id)
    INCLUDE (job_instance_id);
DROP INDEX batch_job_execution_status_ix;
