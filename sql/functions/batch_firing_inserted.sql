-- New firings: the status counts and schedule counters of their schedules (per statement).
CREATE OR REPLACE FUNCTION batch_firing_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT n.schedule_id::text AS sched, n.status, count(*) AS n FROM new_rows n
              GROUP BY n.schedule_id, n.status LOOP
        PERFORM batch_status_add('schedule', r.sched, r.status, r.n);
    END LOOP;
    FOR r IN SELECT n.schedule_id::text AS sched, sum(c.fired) AS fired, sum(c.missed) AS missed,
                    sum(c.nolaunch) AS nolaunch, sum(c.orphaned) AS orphaned,
                    sum(c.overlapped) AS overlapped
               FROM new_rows n
              CROSS JOIN LATERAL batch_firing_counts(n.status, n.kind, n.missed_count, n.instant_count) c
              GROUP BY n.schedule_id LOOP
        PERFORM batch_metric_add('schedule_fired_count', r.sched, r.fired);
        PERFORM batch_metric_add('schedule_missed_count', r.sched, r.missed);
        PERFORM batch_metric_add('schedule_failed_to_launch_count', r.sched, r.nolaunch);
        PERFORM batch_metric_add('schedule_orphaned_count', r.sched, r.orphaned);
        PERFORM batch_metric_add('schedule_skipped_overlap_count', r.sched, r.overlapped);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_firing_ins_tg ON batch_schedule_firing;
CREATE TRIGGER batch_firing_ins_tg AFTER INSERT ON batch_schedule_firing
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_firing_inserted();
