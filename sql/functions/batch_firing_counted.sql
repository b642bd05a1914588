-- A firing's outcome recorded: the difference it makes.
CREATE OR REPLACE FUNCTION batch_firing_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n record;
    o record;
    v_sched varchar := NEW.schedule_id::text;
BEGIN
    n := batch_firing_counts(NEW.status, NEW.kind, NEW.missed_count);
    o := batch_firing_counts(OLD.status, OLD.kind, OLD.missed_count);
    PERFORM batch_status_add('schedule', v_sched, OLD.status, -1);
    PERFORM batch_status_add('schedule', v_sched, NEW.status, 1);
    PERFORM batch_metric_add('schedule_fired_count', v_sched, n.fired - o.fired);
    PERFORM batch_metric_add('schedule_missed_count', v_sched, n.missed - o.missed);
    PERFORM batch_metric_add('schedule_failed_to_launch_count', v_sched, n.nolaunch - o.nolaunch);
    PERFORM batch_metric_add('schedule_orphaned_count', v_sched, n.orphaned - o.orphaned);
    PERFORM batch_metric_add('schedule_skipped_overlap_count', v_sched,
                             n.overlapped - o.overlapped);
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_firing_upd_tg ON batch_schedule_firing;
CREATE TRIGGER batch_firing_upd_tg AFTER UPDATE ON batch_schedule_firing
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.kind IS DISTINCT FROM NEW.kind
                       OR OLD.missed_count IS DISTINCT FROM NEW.missed_count)
    EXECUTE FUNCTION batch_firing_counted();
