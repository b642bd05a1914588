-- Whether scheduler node p_node still looks after its firings, as node
-- p_judge judges it: registered, not stopped, and heard from within its
-- lease, counted from the later of its last heartbeat and the start of
-- p_judge's own session (sql/023: a silence the judge shared, cut off from
-- the repository itself, is no sign of death). The one definition read by
-- batch_schedule_orphans_of (gone: not live), batch_schedule_live_firings (a
-- launch in progress) and batch_schedule_launch (a node's own lease, judged
-- by itself).
CREATE OR REPLACE FUNCTION batch_scheduler_node_live(p_node varchar, p_judge varchar)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT coalesce((
        SELECT n.stopped_at IS NULL
               AND greatest(n.heartbeat_at,
                            (SELECT j.session_since FROM batch_scheduler_node j
                              WHERE j.node_id = p_judge))
                   >= batch_now() - n.lease_seconds * interval '1 second'
          FROM batch_scheduler_node n WHERE n.node_id = p_node), false)
$$;
