-- Steps removed before they ended (a dead run's, by cleanup): their counts,
-- which readers added while the step was open, move into the counters.
CREATE OR REPLACE FUNCTION batch_step_deleted_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.job_name, sum(o.read_count) AS rd, sum(o.write_count) AS wr,
                    sum(o.read_skip_count + o.process_skip_count + o.write_skip_count) AS sk,
                    sum(o.filter_count) AS fi, sum(o.commit_count) AS cm,
                    sum(o.rollback_count) AS rb, sum(o.duplicate_target_write_count) AS du
               FROM old_rows o JOIN batch_job_execution e USING (job_execution_id)
               JOIN batch_job_instance i USING (job_instance_id)
              WHERE o.end_time IS NULL
                AND NOT EXISTS (SELECT 1 FROM old_rows w
                                 WHERE w.manager_step_execution_id = o.step_execution_id)
              GROUP BY i.job_name LOOP
        PERFORM batch_step_counts_job(r.job_name, 1, r.rd, r.wr, r.sk, r.fi, r.cm, r.rb, r.du);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_step_deleted_tg ON batch_step_execution;
CREATE TRIGGER batch_step_deleted_tg AFTER DELETE ON batch_step_execution
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_step_deleted_tg();
