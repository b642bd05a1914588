-- A partition that ends adds its counts (of all its claims) for its last
-- claimant's host; one whose counts or claimant change after it ended adds
-- the difference.
CREATE OR REPLACE FUNCTION batch_partition_host_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    SELECT i.job_name INTO v_job FROM batch_job_execution e
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE e.job_execution_id = NEW.job_execution_id;
    IF OLD.end_time IS NOT NULL THEN
        PERFORM batch_partition_host_add(v_job, OLD.worker, -OLD.read_count, -OLD.write_count);
    END IF;
    IF NEW.end_time IS NOT NULL THEN
        PERFORM batch_partition_host_add(v_job, NEW.worker, NEW.read_count, NEW.write_count);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_partition_host_upd_tg ON batch_step_execution;
CREATE TRIGGER batch_partition_host_upd_tg AFTER UPDATE ON batch_step_execution
    FOR EACH ROW WHEN (NEW.partition_index IS NOT NULL
        AND (OLD.end_time IS NOT NULL OR NEW.end_time IS NOT NULL)
        AND (OLD.end_time IS DISTINCT FROM NEW.end_time
             OR OLD.read_count <> NEW.read_count OR OLD.write_count <> NEW.write_count
             OR OLD.worker IS DISTINCT FROM NEW.worker))
    EXECUTE FUNCTION batch_partition_host_tg();
