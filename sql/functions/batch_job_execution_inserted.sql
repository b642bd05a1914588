-- New executions: their status counts (per statement). Their job's newest id
-- is written at the commit (batch_job_summary_noted), so that a launch holds
-- no lock on its job's summary row through its transaction; a statement of
-- many rows (a data load) writes it here, once per job, instead of once per
-- row at its commit.
CREATE OR REPLACE FUNCTION batch_job_execution_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    IF (SELECT count(*) FROM new_rows) > 1 THEN
        INSERT INTO batch_job_summary AS s (job_name, last_execution_id)
        SELECT i.job_name, max(n.job_execution_id) FROM new_rows n
          JOIN batch_job_instance i USING (job_instance_id) GROUP BY i.job_name
        ON CONFLICT (job_name) DO UPDATE
           SET last_execution_id = greatest(s.last_execution_id, excluded.last_execution_id);
    END IF;
    FOR r IN SELECT i.job_name, n.status, count(*) AS n FROM new_rows n
               JOIN batch_job_instance i USING (job_instance_id)
              GROUP BY i.job_name, n.status LOOP
        PERFORM batch_status_add('job', r.job_name, r.status, r.n);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_execution_ins_tg ON batch_job_execution;
CREATE TRIGGER batch_job_execution_ins_tg AFTER INSERT ON batch_job_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_execution_inserted();
