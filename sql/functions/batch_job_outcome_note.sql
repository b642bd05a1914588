-- A job's newest COMPLETED or FAILED end time (batch_job_outcome), a high-water mark.
CREATE OR REPLACE FUNCTION batch_job_outcome_note(p_job_instance_id bigint, p_status varchar,
    p_end timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    IF p_status NOT IN ('COMPLETED', 'FAILED') OR p_end IS NULL THEN
        RETURN;
    END IF;
    SELECT i.job_name INTO v_job FROM batch_job_instance i
     WHERE i.job_instance_id = p_job_instance_id;
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    -- (greatest ignores NULL: the other status's time stays)
    INSERT INTO batch_job_outcome AS o (job_name, last_success_time, last_failure_time)
    VALUES (v_job, CASE WHEN p_status = 'COMPLETED' THEN p_end END,
            CASE WHEN p_status = 'FAILED' THEN p_end END)
    ON CONFLICT (job_name) DO UPDATE
       SET last_success_time = greatest(o.last_success_time, excluded.last_success_time),
           last_failure_time = greatest(o.last_failure_time, excluded.last_failure_time);
END
$$;
