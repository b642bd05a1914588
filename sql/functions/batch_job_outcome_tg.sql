-- An execution's end (a row trigger on the few updates that set a final
-- status; the chunk checkpoint's update sets neither column and runs none).
CREATE OR REPLACE FUNCTION batch_job_outcome_tg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM batch_job_outcome_note(NEW.job_instance_id, NEW.status, NEW.end_time);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_outcome_upd_tg ON batch_job_execution;
CREATE TRIGGER batch_job_outcome_upd_tg AFTER UPDATE OF status, end_time ON batch_job_execution
    FOR EACH ROW WHEN (NEW.status IN ('COMPLETED', 'FAILED') AND NEW.end_time IS NOT NULL
        AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.end_time IS DISTINCT FROM NEW.end_time))
    EXECUTE FUNCTION batch_job_outcome_tg();
