-- The claimants of running partitions on one host (owner ids starting with
-- p_host || ':') whose partition lock is live: a worker checks which of them
-- are dead processes of its own host before it claims.
CREATE OR REPLACE FUNCTION batch_partition_holders(p_host varchar)
RETURNS SETOF varchar LANGUAGE sql STABLE AS $$
    SELECT DISTINCT x.owner_id FROM batch_step_execution x
      JOIN batch_lock l ON l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
     WHERE x.partition_index IS NOT NULL AND x.status = 'STARTED'
       AND batch_lock_is_held(l.released, l.locked_until)
       AND left(x.owner_id, length(p_host) + 1) = p_host || ':'
$$;
