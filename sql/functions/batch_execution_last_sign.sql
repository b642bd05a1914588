-- The last sign of life of job execution p_job_execution_id, the end a
-- burial gives a dead execution: the latest of its heartbeat, its own row's
-- last update and the last update of any of its steps and partitions (each
-- chunk's checkpoint), never in the future. A partitioned execution's
-- partitions commit into their own rows, and a short one may die before its
-- first heartbeat: its end is then its last partition's checkpoint, not its
-- start (it showed END = START and a duration of 0 s).
CREATE OR REPLACE FUNCTION batch_execution_last_sign(p_job_execution_id bigint)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT least(batch_now(), greatest(e.heartbeat_time, e.last_updated,
               (SELECT max(s.last_updated) FROM batch_step_execution s
                 WHERE s.job_execution_id = e.job_execution_id)))
      FROM batch_job_execution e WHERE e.job_execution_id = p_job_execution_id
$$;
