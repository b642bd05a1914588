-- Register or refresh node p_node; returns the database's time, which is the
-- only clock a scheduler goes by.
CREATE OR REPLACE FUNCTION batch_scheduler_heartbeat(p_node varchar, p_host varchar, p_pid int,
    p_lease_seconds double precision) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO batch_scheduler_node AS n (node_id, host, pid, lease_seconds)
    VALUES (p_node, p_host, p_pid, p_lease_seconds)
    ON CONFLICT (node_id) DO UPDATE
       SET heartbeat_at = batch_now(), lease_seconds = excluded.lease_seconds,
           stopped_at = NULL;
    SELECT batch_now();
$$;
