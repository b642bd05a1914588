-- A job execution ended (or is being restarted) while a step of its own
-- was still recorded as running: its process lost the database before it
-- could write the step's end (an outage past its budget, a kill). The step
-- ends with its job: FAILED or STOPPED as the job (p_status; NULL: the job
-- execution's own status, FAILED when that is still live or COMPLETED),
-- its end the last time it was seen working (its last checkpoint, never
-- before its start), so that `show` prints a duration that does not grow.
-- Partitions are not touched: they have their own lease and claimants.
-- Returns how many steps it ended.
CREATE OR REPLACE FUNCTION batch_steps_end_with_job(p_job_execution_id bigint,
    p_status varchar, p_message text)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar := p_status;
    n bigint;
BEGIN
    IF v_status IS NULL THEN
        SELECT status INTO v_status FROM batch_job_execution
         WHERE job_execution_id = p_job_execution_id;
    END IF;
    IF v_status IS NULL OR v_status NOT IN ('FAILED', 'STOPPED') THEN
        v_status := 'FAILED';
    END IF;
    UPDATE batch_step_execution s
       SET status = v_status, exit_code = v_status,
           exit_message = left(concat_ws(': ', 'its job execution ended before the step''s '
               || 'end was recorded', nullif(p_message, '')), 2500),
           end_time = greatest(s.start_time, s.last_updated),
           last_updated = batch_now(), version = s.version + 1
     WHERE s.job_execution_id = p_job_execution_id AND s.partition_index IS NULL
       AND batch_status_is_live(s.status);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
