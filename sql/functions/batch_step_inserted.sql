-- Steps written already ended count at once (per statement: see the audit
-- trigger). A manager step that had ended, and counted as a step of its
-- own, before its first partitions were written (not what the engine does,
-- which writes them together, but possible by hand): from then on only the
-- partitions count, so the manager's counts come back out.
CREATE OR REPLACE FUNCTION batch_step_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    m record;
BEGIN
    -- (by job name: one update of each counter row per statement)
    FOR m IN SELECT i.job_name, sum(n.read_count) AS rd, sum(n.write_count) AS wr,
                    sum(n.read_skip_count + n.process_skip_count + n.write_skip_count) AS sk,
                    sum(n.filter_count) AS fi, sum(n.commit_count) AS cm,
                    sum(n.rollback_count) AS rb, sum(n.duplicate_target_write_count) AS du
               FROM new_rows n JOIN batch_job_execution e USING (job_execution_id)
               JOIN batch_job_instance i USING (job_instance_id)
              WHERE n.end_time IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
                                 WHERE w.manager_step_execution_id = n.step_execution_id)
              GROUP BY i.job_name LOOP
        PERFORM batch_step_counts_job(m.job_name, 1, m.rd, m.wr, m.sk, m.fi, m.cm, m.rb, m.du);
    END LOOP;
    -- (NOT EXISTS, not NOT IN: an anti join, however many rows the statement wrote)
    FOR m IN SELECT s.* FROM (SELECT DISTINCT n.manager_step_execution_id AS id FROM new_rows n
                               WHERE n.manager_step_execution_id IS NOT NULL) g
               JOIN batch_step_execution s ON s.step_execution_id = g.id
              WHERE s.end_time IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM new_rows n
                                 WHERE n.step_execution_id = s.step_execution_id)
                AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
                                 WHERE w.manager_step_execution_id = s.step_execution_id
                                   AND NOT EXISTS (SELECT 1 FROM new_rows n
                                                    WHERE n.step_execution_id
                                                          = w.step_execution_id)) LOOP
        PERFORM batch_step_counts_add(m.job_execution_id, -1, m.read_count, m.write_count,
            m.read_skip_count + m.process_skip_count + m.write_skip_count, m.filter_count,
            m.commit_count, m.rollback_count, m.duplicate_target_write_count);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_step_inserted_tg ON batch_step_execution;
CREATE TRIGGER batch_step_inserted_tg AFTER INSERT ON batch_step_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_step_inserted();
