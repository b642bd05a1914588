-- Create a manager step execution (STARTED) and its partitions (STARTING) in
-- one transaction, only while the job execution is STARTED. p_partitions is a
-- JSON array of {"index": i, "context": {...}}; p_fingerprint the manager's
-- step definition fingerprint (NULL: claimable by any worker with the job and
-- the step). Returns the job execution's status and the manager's id (NULL
-- when not created).
CREATE OR REPLACE FUNCTION batch_partitions_create(p_job_execution_id bigint, p_manager varchar,
    p_manager_context jsonb, p_partitions jsonb, p_fingerprint varchar DEFAULT NULL,
    OUT job_status varchar, OUT manager_step_execution_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
BEGIN
    SELECT e.status INTO job_status FROM batch_job_execution e
     WHERE e.job_execution_id = p_job_execution_id;
    IF job_status IS DISTINCT FROM 'STARTED' THEN
        RETURN;
    END IF;
    INSERT INTO batch_step_execution (job_execution_id, step_name, status, start_time,
                                      step_fingerprint)
    VALUES (p_job_execution_id, p_manager, 'STARTED', batch_now(), p_fingerprint)
    RETURNING step_execution_id INTO manager_step_execution_id;
    INSERT INTO batch_step_execution_context (step_execution_id, serialized_context)
    VALUES (manager_step_execution_id, p_manager_context);
    WITH p AS (
        SELECT (x->>'index')::int AS idx, x->'context' AS ctx
          FROM jsonb_array_elements(p_partitions) AS x),
    s AS (
        INSERT INTO batch_step_execution (job_execution_id, step_name, status,
                                          manager_step_execution_id, partition_index)
        SELECT p_job_execution_id, p_manager || ':partition' || p.idx, 'STARTING',
               manager_step_execution_id, p.idx
          FROM p ORDER BY p.idx
        RETURNING step_execution_id, partition_index)
    INSERT INTO batch_step_execution_context (step_execution_id, serialized_context)
    SELECT s.step_execution_id, p.ctx FROM s JOIN p ON p.idx = s.partition_index;
    PERFORM pg_notify('cbatch_partitions', p_job_execution_id::text);
END
$$;
