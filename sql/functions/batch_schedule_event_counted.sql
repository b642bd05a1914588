-- Schedule events that operators count, per schedule (subject: its id), in
-- the statement that records them (whoever does): recovery restarts
-- (RESTARTED), firings recovery gave up on (NOT_RECOVERED) and instants a
-- node lost to another node's claim (SKIPPED_CLAIMED) and instants a backfill
-- queued (BACKFILL, sql/020). Counters: cleanup of the events never takes
-- them back.
CREATE OR REPLACE FUNCTION batch_schedule_event_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT n.schedule_id::text AS sched,
                    count(*) FILTER (WHERE n.outcome = 'RESTARTED') AS restarted,
                    count(*) FILTER (WHERE n.outcome = 'NOT_RECOVERED') AS given_up,
                    count(*) FILTER (WHERE n.outcome = 'SKIPPED_CLAIMED') AS lost,
                    count(*) FILTER (WHERE n.outcome = 'BACKFILL') AS backfilled
               FROM new_rows n
              WHERE n.outcome IN ('RESTARTED', 'NOT_RECOVERED', 'SKIPPED_CLAIMED', 'BACKFILL')
              GROUP BY n.schedule_id LOOP
        PERFORM batch_metric_add('schedule_recovery_restart_count', r.sched, r.restarted);
        PERFORM batch_metric_add('schedule_not_recovered_count', r.sched, r.given_up);
        PERFORM batch_metric_add('schedule_claim_lost_count', r.sched, r.lost);
        PERFORM batch_metric_add('schedule_backfill_count', r.sched, r.backfilled);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_schedule_event_counted_tg ON batch_schedule_event;
CREATE TRIGGER batch_schedule_event_counted_tg AFTER INSERT ON batch_schedule_event
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_schedule_event_counted();
