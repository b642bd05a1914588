-- A status change (a few per execution; a row trigger, so that the chunk
-- checkpoint's update of the execution, which changes no status, runs none).
CREATE OR REPLACE FUNCTION batch_job_execution_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    SELECT i.job_name INTO v_job FROM batch_job_instance i
     WHERE i.job_instance_id = NEW.job_instance_id;
    PERFORM batch_status_add('job', v_job, OLD.status, -1);
    PERFORM batch_status_add('job', v_job, NEW.status, 1);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_execution_upd_tg ON batch_job_execution;
CREATE TRIGGER batch_job_execution_upd_tg AFTER UPDATE OF status ON batch_job_execution
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION batch_job_execution_status_changed();
