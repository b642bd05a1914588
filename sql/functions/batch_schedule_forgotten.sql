-- A removed schedule's rows go with it (its counters are read through it).
CREATE OR REPLACE FUNCTION batch_schedule_forgotten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM batch_metric_counter c USING old_rows o
     WHERE c.metric LIKE 'schedule%' AND c.subject = o.schedule_id::text;
    DELETE FROM batch_status_count c USING old_rows o
     WHERE c.kind = 'schedule' AND c.subject = o.schedule_id::text;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_schedule_forgotten_tg ON batch_schedule;
CREATE TRIGGER batch_schedule_forgotten_tg AFTER DELETE ON batch_schedule
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_schedule_forgotten();
