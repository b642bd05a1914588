-- A new execution's id as its job's newest (batch_job_summary), written at
-- COMMIT. A job has one summary row, which every launch of the job updates:
-- updated by the INSERT, its row lock was held through the rest of the
-- launch's transaction (parameters, context, lock tag, the commit's round
-- trips), and launches of one job queued behind each other (100 firings of
-- one job due at once waited 24 ms each on it). Deferred to the commit, the
-- lock is held while the commit is written only. A statement that inserts
-- many executions at once (a data load) writes their newest at once instead
-- (batch_job_execution_inserted), and its rows find it here already written.
CREATE OR REPLACE FUNCTION batch_job_summary_noted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    SELECT i.job_name INTO v_job FROM batch_job_instance i
     WHERE i.job_instance_id = NEW.job_instance_id;
    IF v_job IS NULL OR EXISTS (SELECT 1 FROM batch_job_summary s WHERE s.job_name = v_job
                                   AND s.last_execution_id >= NEW.job_execution_id) THEN
        RETURN NULL;
    END IF;
    INSERT INTO batch_job_summary AS s (job_name, last_execution_id)
    VALUES (v_job, NEW.job_execution_id)
    ON CONFLICT (job_name) DO UPDATE
       SET last_execution_id = greatest(s.last_execution_id, excluded.last_execution_id);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_job_summary_ins_tg ON batch_job_execution;
CREATE CONSTRAINT TRIGGER batch_job_summary_ins_tg AFTER INSERT ON batch_job_execution
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION batch_job_summary_noted();
