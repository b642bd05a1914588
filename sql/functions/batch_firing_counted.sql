-- A firing's outcome recorded: the difference it makes. Each schedule counter
-- counts events (a firing fired, missed, orphaned...), so it only grows: a
-- firing that leaves ORPHANED (its restart finished it) stays counted as
-- orphaned, as the history's ORPHANED event stays. The status counts are
-- gauges and follow the status both ways.
CREATE OR REPLACE FUNCTION batch_firing_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n record;
    o record;
    v_sched varchar := NEW.schedule_id::text;
BEGIN
    n := batch_firing_counts(NEW.status, NEW.kind, NEW.missed_count, NEW.instant_count);
    o := batch_firing_counts(OLD.status, OLD.kind, OLD.missed_count, OLD.instant_count);
    -- (a run of skips extended keeps its status: nothing to move)
    IF OLD.status IS DISTINCT FROM NEW.status THEN
        PERFORM batch_status_add('schedule', v_sched, OLD.status, -1);
        PERFORM batch_status_add('schedule', v_sched, NEW.status, 1);
    END IF;
    PERFORM batch_metric_add('schedule_fired_count', v_sched, greatest(n.fired - o.fired, 0));
    PERFORM batch_metric_add('schedule_missed_count', v_sched, greatest(n.missed - o.missed, 0));
    PERFORM batch_metric_add('schedule_failed_to_launch_count', v_sched, greatest(n.nolaunch - o.nolaunch, 0));
    PERFORM batch_metric_add('schedule_orphaned_count', v_sched, greatest(n.orphaned - o.orphaned, 0));
    PERFORM batch_metric_add('schedule_skipped_overlap_count', v_sched,
                             greatest(n.overlapped - o.overlapped, 0));
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_firing_upd_tg ON batch_schedule_firing;
CREATE TRIGGER batch_firing_upd_tg AFTER UPDATE ON batch_schedule_firing
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.kind IS DISTINCT FROM NEW.kind
                       OR OLD.missed_count IS DISTINCT FROM NEW.missed_count
                       OR OLD.instant_count IS DISTINCT FROM NEW.instant_count)
    EXECUTE FUNCTION batch_firing_counted();
