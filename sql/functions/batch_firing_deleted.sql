-- Firings removed (cleanup, a schedule removed): their statuses no longer count.
CREATE OR REPLACE FUNCTION batch_firing_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT o.schedule_id, o.status, count(*) AS n FROM old_rows o
              GROUP BY o.schedule_id, o.status LOOP
        PERFORM batch_status_add('schedule', r.schedule_id::text, r.status, -r.n);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_firing_del_tg ON batch_schedule_firing;
CREATE TRIGGER batch_firing_del_tg AFTER DELETE ON batch_schedule_firing
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION batch_firing_deleted();
