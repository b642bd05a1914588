-- Executions written already ended (imports, tests, generators): per
-- statement, one upsert per job however many rows.
CREATE OR REPLACE FUNCTION batch_job_outcome_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO batch_job_outcome AS o (job_name, last_success_time, last_failure_time)
    SELECT i.job_name, max(n.end_time) FILTER (WHERE n.status = 'COMPLETED'),
           max(n.end_time) FILTER (WHERE n.status = 'FAILED')
      FROM new_rows n JOIN batch_job_instance i USING (job_instance_id)
     WHERE n.status IN ('COMPLETED', 'FAILED') AND n.end_time IS NOT NULL
     GROUP BY i.job_name
    ON CONFLICT (job_name) DO UPDATE
       SET last_success_time = greatest(o.last_success_time, excluded.last_success_time),
           last_failure_time = greatest(o.last_failure_time, excluded.last_failure_time);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_outcome_ins_tg ON batch_job_execution;
CREATE TRIGGER batch_job_outcome_ins_tg AFTER INSERT ON batch_job_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_outcome_inserted();
