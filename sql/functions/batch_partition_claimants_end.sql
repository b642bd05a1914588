-- End the sessions recorded on the lock rows of partitions p_partitions
-- (step execution ids), when not released: all of them, or with p_lapsed_only
-- only those whose lease ran out (a live claimant of a partition that ends
-- STOPPED is left alone). A session that also owns another live lock moved on
-- to other work and is not this partition's any more: left alone too. Raises
-- 55P03, naming the partition, when a session could not be ended (its row
-- locks would stay). Returns what happened to each session (NULL: none).
CREATE OR REPLACE FUNCTION batch_partition_claimants_end(p_partitions bigint[], p_lapsed_only boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    l record;
    e record;
    v_notes text;
BEGIN
    -- A plain read: never waits on a frozen claimant's row lock.
    FOR l IN SELECT b.lock_name, b.owner_id, b.owner_backend_pid, b.owner_backend_start
               FROM batch_step_execution x
               JOIN batch_lock b ON b.lock_name = x.lock_name
              WHERE x.step_execution_id = ANY (p_partitions)
                AND x.partition_index IS NOT NULL
                AND NOT b.released AND b.owner_backend_pid IS NOT NULL
                AND (NOT p_lapsed_only OR b.locked_until < batch_now())
              ORDER BY b.lock_name
    LOOP
        CONTINUE WHEN EXISTS (SELECT 1 FROM batch_lock o
             WHERE o.owner_backend_pid = l.owner_backend_pid
               AND o.owner_backend_start = l.owner_backend_start
               AND o.lock_name <> l.lock_name
               AND batch_lock_is_held(o.released, o.locked_until));
        SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid, l.owner_backend_start);
        IF NOT e.ended THEN
            RAISE EXCEPTION 'partition lock "%" of % cannot be ended: %', l.lock_name,
                l.owner_id, e.note USING ERRCODE = '55P03';
        END IF;
        v_notes := concat_ws('; ', v_notes, l.lock_name || ': ' || e.note);
    END LOOP;
    RETURN v_notes;
END
$$;
