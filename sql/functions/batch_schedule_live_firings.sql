-- The live firings of schedule p_schedule_id, as node p_node (or anyone, when
-- NULL) judges them, and why each is live: the one
-- definition of "live" that batch_schedule_live_firing (the overlap policy)
-- and the backfill's bound under ALLOW (batch_schedule_take_queued) read. A
-- QUEUED firing is not live: it runs nothing yet, and it waits for the live
-- ones itself (taken oldest first by batch_schedule_take_queued); counting
-- it would let two queued firings wait for each other forever.
CREATE OR REPLACE FUNCTION batch_schedule_live_firings(p_schedule_id bigint,
    p_node varchar DEFAULT NULL)
RETURNS TABLE (firing_id bigint, fire_time timestamptz, kind varchar, why varchar)
LANGUAGE sql STABLE AS $$
    SELECT f.firing_id, f.fire_time, f.kind,
           -- times in ISO 8601 (UTC, Z), never the session's DateStyle
           'firing ' || f.firing_id || ' ('
           || to_char(f.fire_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ') '
           || CASE WHEN f.recover_after IS NOT NULL
                   THEN 'has a restart due at '
                        || to_char(f.recover_after AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                   WHEN x.job_execution_id IS NOT NULL
                        AND batch_schedule_execution_live(x.job_execution_id)
                   THEN 'runs execution ' || x.job_execution_id || ' (' || x.status || ')'
                   ELSE 'is being launched by node ' || f.node_id END
      FROM batch_schedule_firing f
      LEFT JOIN LATERAL batch_schedule_firing_execution(f.firing_id) x ON true
     WHERE f.schedule_id = p_schedule_id
       -- as the partial index batch_schedule_firing_live_ix (sql/009) reads it
       AND (f.status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED', 'QUEUED')
            OR f.recover_after IS NOT NULL)
       AND (f.recover_after IS NOT NULL
            -- a launch in progress (no execution yet) on a node still alive,
            -- as node p_node, the one asking, judges it
            OR (f.status IN ('CLAIMED', 'LAUNCHED')
                AND batch_scheduler_node_live(f.node_id, p_node))
            -- its execution, on any node, under a lease that holds
            OR (f.status <> 'QUEUED' AND x.job_execution_id IS NOT NULL
                AND batch_schedule_execution_live(x.job_execution_id)))
$$;
