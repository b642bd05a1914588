-- 015: history at scale, the last misses (issue 20).
--
-- Cleanup starts without reading the history and walks only what it removes:
--  - batch_cleanup_removable() (sql/functions/) is its removal rule, one function that can be
--    tried in psql, e.g.
--      SELECT r.* FROM batch_cleanup_plan(interval '30 days') p,
--             batch_cleanup_removable(p.cutoff, p.keep_names, p.keep_first,
--                                     p.protected_ids) r LIMIT 20;
--    It is a plain SQL query (inlined into the statement that calls it), so
--    a caller's range and order on end_time reach the index below.
--  - batch_cleanup_plan() (sql/functions/) fixes what every batch is judged by when a cleanup
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

-- Executions of a rare (job, status) pair, newest first, read by walking the
-- status's executions newest first and keeping its job's: the instance of
-- each comes with the key (an index-only walk, no visit of every execution
-- of that status to learn its instance), and the job of each instance from
-- batch_job_instance_name_ix (index-only too). Only the rows shown are read.
CREATE INDEX batch_job_execution_status_inst_ix ON batch_job_execution (status, job_execution_id)
    INCLUDE (job_instance_id);
DROP INDEX batch_job_execution_status_ix;
