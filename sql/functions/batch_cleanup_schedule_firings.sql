-- What cleanup may remove of the schedule firings: those claimed before
-- p_cutoff that are finished (not claimed, launched or queued, no restart
-- due), not their schedule's newest, and with no event recorded since the
-- cutoff. Their older events go with them (batch_cleanup_schedule_events
-- lets those go too: a firing that goes is never one whose events stay).
-- A plain query, inlined into the statement that calls it, so that a
-- caller's range and order on claimed_at reach
-- batch_schedule_firing_claimed_ix; try it with
--   SELECT * FROM batch_cleanup_schedule_firings(batch_now() - interval '30 days') LIMIT 20;
CREATE OR REPLACE FUNCTION batch_cleanup_schedule_firings(p_cutoff timestamptz)
RETURNS TABLE (firing_id bigint, claimed_at timestamptz)
LANGUAGE sql STABLE AS $$
SELECT y.firing_id, y.claimed_at
  FROM batch_schedule_firing y
 WHERE y.claimed_at < p_cutoff
   AND y.status NOT IN ('CLAIMED', 'LAUNCHED', 'QUEUED')
   AND y.recover_after IS NULL
   AND y.firing_id <> (SELECT max(g.firing_id) FROM batch_schedule_firing g
                        WHERE g.schedule_id = y.schedule_id)
   -- (a scalar subquery, not NOT EXISTS: one probe of the events' key per
   -- firing, never a hash of every event)
   AND ((SELECT max(ke.recorded_at) FROM batch_schedule_event ke
          WHERE ke.firing_id = y.firing_id) < p_cutoff) IS NOT FALSE
$$;
