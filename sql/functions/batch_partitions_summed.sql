-- A partitioned step's counts are the sums of its partitions'. The manager
-- writes them when it ends; a manager that died before (killed, buried)
-- never did, and its step read less than its partitions had committed. Every
-- burial and every end of a job's steps calls this first, for the live
-- manager steps of p_job_execution_id. Returns how many steps it set.
CREATE OR REPLACE FUNCTION batch_partitions_summed(p_job_execution_id bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE batch_step_execution m
       SET read_count = p.read_count, write_count = p.write_count,
           filter_count = p.filter_count, commit_count = p.commit_count,
           rollback_count = p.rollback_count, read_skip_count = p.read_skip_count,
           write_skip_count = p.write_skip_count, process_skip_count = p.process_skip_count,
           duplicate_target_write_count = p.duplicate_target_write_count
      FROM (SELECT x.manager_step_execution_id AS id, sum(x.read_count) AS read_count,
                   sum(x.write_count) AS write_count, sum(x.filter_count) AS filter_count,
                   sum(x.commit_count) AS commit_count, sum(x.rollback_count) AS rollback_count,
                   sum(x.read_skip_count) AS read_skip_count,
                   sum(x.write_skip_count) AS write_skip_count,
                   sum(x.process_skip_count) AS process_skip_count,
                   sum(x.duplicate_target_write_count) AS duplicate_target_write_count
              FROM batch_step_execution x
             WHERE x.job_execution_id = p_job_execution_id
               AND x.manager_step_execution_id IS NOT NULL
             GROUP BY x.manager_step_execution_id) p
     WHERE m.step_execution_id = p.id AND batch_status_is_live(m.status);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
