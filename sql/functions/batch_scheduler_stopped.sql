-- Node p_node stopped on purpose: its firings are orphans at once (no lease to wait for).
CREATE OR REPLACE FUNCTION batch_scheduler_stopped(p_node varchar) RETURNS void
LANGUAGE sql AS $$
    UPDATE batch_scheduler_node SET stopped_at = batch_now(), heartbeat_at = batch_now()
     WHERE node_id = p_node;
$$;
