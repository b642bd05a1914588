-- Register or refresh node p_node; returns the database's time, which is the
-- only clock a scheduler goes by. p_new_session: the first heartbeat on a
-- session opened again after the repository was lost (sql/023).
CREATE OR REPLACE FUNCTION batch_scheduler_heartbeat(p_node varchar, p_host varchar, p_pid int,
    p_lease_seconds double precision, p_new_session boolean DEFAULT false) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO batch_scheduler_node AS n (node_id, host, pid, lease_seconds)
    VALUES (p_node, p_host, p_pid, p_lease_seconds)
    ON CONFLICT (node_id) DO UPDATE
       SET heartbeat_at = batch_now(), lease_seconds = excluded.lease_seconds,
           stopped_at = NULL,
           session_since = CASE WHEN p_new_session THEN batch_now() ELSE n.session_since END;
    SELECT batch_now();
$$;
