-- Removed executions leave the status counts (their instance must still
-- exist when the statement ends: cleanup removes instances in a later
-- statement of the same transaction).
CREATE OR REPLACE FUNCTION batch_job_execution_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.job_name, o.status, count(*) AS n FROM old_rows o
               JOIN batch_job_instance i USING (job_instance_id)
              GROUP BY i.job_name, o.status LOOP
        PERFORM batch_status_add('job', r.job_name, r.status, -r.n);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_execution_del_tg ON batch_job_execution;
CREATE TRIGGER batch_job_execution_del_tg AFTER DELETE ON batch_job_execution
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_execution_deleted();
