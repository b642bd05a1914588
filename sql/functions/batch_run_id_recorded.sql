-- The largest run.id a job was ever given: `run --next` counts on from it.
CREATE OR REPLACE FUNCTION batch_run_id_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO batch_job_summary AS s (job_name, max_run_id)
    SELECT i.job_name, max(n.parameter_value::bigint) FROM new_rows n
      JOIN batch_job_execution e USING (job_execution_id)
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE n.parameter_name = 'run.id' AND n.parameter_type = 'long' AND n.identifying
       AND n.parameter_value ~ '^[-+]?[0-9]{1,18}$'
     GROUP BY i.job_name
    ON CONFLICT (job_name) DO UPDATE
       SET max_run_id = greatest(s.max_run_id, excluded.max_run_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_run_id_recorded_tg ON batch_job_execution_params;
CREATE TRIGGER batch_run_id_recorded_tg AFTER INSERT ON batch_job_execution_params
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_run_id_recorded();
