-- A step that ends adds its counts; a step whose counts change after it ended
-- (a manager's sums) or that is handed back (a partition: end_time NULL
-- again, counted again when it ends) adds the difference.
CREATE OR REPLACE FUNCTION batch_step_counted_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o int := (OLD.end_time IS NOT NULL AND batch_step_counted(OLD.step_execution_id, false))::int;
    n int := (NEW.end_time IS NOT NULL AND batch_step_counted(NEW.step_execution_id, false))::int;
BEGIN
    PERFORM batch_step_counts_add(NEW.job_execution_id, 1,
        n * NEW.read_count - o * OLD.read_count, n * NEW.write_count - o * OLD.write_count,
        n * (NEW.read_skip_count + NEW.process_skip_count + NEW.write_skip_count)
          - o * (OLD.read_skip_count + OLD.process_skip_count + OLD.write_skip_count),
        n * NEW.filter_count - o * OLD.filter_count, n * NEW.commit_count - o * OLD.commit_count,
        n * NEW.rollback_count - o * OLD.rollback_count,
        n * NEW.duplicate_target_write_count - o * OLD.duplicate_target_write_count);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_step_counted_upd_tg ON batch_step_execution;
CREATE TRIGGER batch_step_counted_upd_tg AFTER UPDATE ON batch_step_execution
    FOR EACH ROW WHEN (OLD.end_time IS NOT NULL OR NEW.end_time IS NOT NULL)
    EXECUTE FUNCTION batch_step_counted_tg();
