-- What cleanup may remove of the schedule events: those recorded before
-- p_cutoff, unless their firing stays as it is (open: claimed, launched or
-- queued; a restart due; or its schedule's newest, which `schedule list`
-- shows with its events). Events of no firing (another node's skip) go by
-- age alone. A plain query, inlined into the statement that calls it, so
-- that a caller's range and order on recorded_at reach
-- batch_schedule_event_recorded_ix; try it with
--   SELECT * FROM batch_cleanup_schedule_events(batch_now() - interval '30 days') LIMIT 20;
CREATE OR REPLACE FUNCTION batch_cleanup_schedule_events(p_cutoff timestamptz)
RETURNS TABLE (event_id bigint, recorded_at timestamptz)
LANGUAGE sql STABLE AS $$
SELECT v.event_id, v.recorded_at
  FROM batch_schedule_event v
 WHERE v.recorded_at < p_cutoff
   -- (a scalar subquery, not NOT EXISTS: one probe of the firing's key per
   -- event, never a hash of every firing built before the first row)
   AND (v.firing_id IS NULL
        OR (SELECT kf.status NOT IN ('CLAIMED', 'LAUNCHED', 'QUEUED')
                   AND kf.recover_after IS NULL
                   AND kf.firing_id <> (SELECT max(g.firing_id)
                                          FROM batch_schedule_firing g
                                         WHERE g.schedule_id = kf.schedule_id)
              FROM batch_schedule_firing kf
             WHERE kf.firing_id = v.firing_id) IS NOT FALSE)
$$;
