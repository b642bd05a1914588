-- The earliest live firing of schedule p_schedule_id other than p_except, as
-- node p_node judges it, and why it is live (NULL firing_id: none is); "live"
-- is batch_schedule_live_firings'.
CREATE OR REPLACE FUNCTION batch_schedule_live_firing(p_schedule_id bigint, p_except bigint,
    p_node varchar DEFAULT NULL, OUT firing_id bigint, OUT why varchar)
LANGUAGE sql STABLE AS $$
    SELECT l.firing_id, l.why FROM batch_schedule_live_firings(p_schedule_id, p_node) l
     WHERE l.firing_id <> coalesce(p_except, 0)
     ORDER BY l.fire_time
     LIMIT 1
$$;
