-- Schedule changes wake sleeping nodes.
CREATE OR REPLACE FUNCTION batch_schedule_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cbatch_schedules', '');
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS batch_schedule_notify_tg ON batch_schedule;
CREATE TRIGGER batch_schedule_notify_tg AFTER INSERT OR UPDATE OF version OR DELETE
    ON batch_schedule FOR EACH STATEMENT EXECUTE FUNCTION batch_schedule_notify();
