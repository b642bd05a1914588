-- Add (p_sign 1) or take back (-1) a step's counts in its job's item counters.
CREATE OR REPLACE FUNCTION batch_step_counts_add(p_job_execution_id bigint, p_sign int,
    p_read numeric, p_write numeric, p_skip numeric, p_filter numeric, p_commit numeric,
    p_rollback numeric, p_duplicate numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    IF p_read = 0 AND p_write = 0 AND p_skip = 0 AND p_filter = 0 AND p_commit = 0
       AND p_rollback = 0 AND p_duplicate = 0 THEN
        RETURN;
    END IF;
    SELECT i.job_name INTO v_job FROM batch_job_execution e
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE e.job_execution_id = p_job_execution_id;
    PERFORM batch_step_counts_job(v_job, p_sign, p_read, p_write, p_skip, p_filter, p_commit,
                                  p_rollback, p_duplicate);
END
$$;
