-- Is the work-queue reader at the end of its input? Asked in the chunk
-- transaction right after a claim that came back short (or empty), with the
-- xmax of every row that still matches the queue (p_xids): the rows this
-- transaction just claimed, rows other transactions hold, and rows nobody
-- holds (xmax 0, or a locker that has ended). End of input ('done') only when
-- every such row is this transaction's own or held by a live sibling
-- partition of execution p_job_execution_id (it will commit them, or its
-- partition is reclaimed and they are claimed again). Any row nobody holds
-- means there is input to claim ('claim'). A holder whose session is
-- recorded on a partition lock of this job that is no longer live (lapsed,
-- not released) is a frozen or lost claimant: its session is ended, and the
-- reader claims again. Any other holder (another job, a session nobody
-- recorded, a prepared transaction) is waited for ('wait').
--
-- An xmax is a transaction id, or a MultiXact id when several transactions
-- lock the row (FOR SHARE beside a foreign key check, say): one that no
-- running transaction has as its own id is read as a MultiXact, and its
-- running members are the holders. A plain id that is also a MultiXact's
-- only errs towards waiting, never towards the end.
--   verdict  'done' | 'claim' (claim again now) | 'wait' (look again soon)
--   note     who holds the rows, for the reader's message
--   wait_seconds  how long the reader waits at most: the lease of the lock
--            the caller runs under (30 s when unknown)
CREATE OR REPLACE FUNCTION batch_queue_holders(p_xids text[], p_job_execution_id bigint,
    p_step_execution_id bigint, OUT verdict varchar, OUT note text,
    OUT wait_seconds double precision)
LANGUAGE plpgsql AS $$
DECLARE
    h record;
    e record;
    v_job varchar;
    v_xid text;
    v_pids int[];
    v_holders int[] := '{}';
    v_free bigint := 0;
BEGIN
    verdict := 'done';
    SELECT i.job_name INTO v_job FROM batch_job_execution x
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE x.job_execution_id = p_job_execution_id;
    SELECT extract(epoch FROM l.locked_until - l.updated_at) INTO wait_seconds
      FROM batch_step_execution s
      JOIN batch_job_execution x ON x.job_execution_id = s.job_execution_id
      JOIN batch_lock l ON l.lock_name = coalesce(s.lock_name, x.lock_name)
     WHERE s.step_execution_id = p_step_execution_id;
    wait_seconds := coalesce(nullif(greatest(wait_seconds, 0), 0), 30);
    PERFORM pg_stat_clear_snapshot();
    FOREACH v_xid IN ARRAY coalesce(p_xids, '{}') LOOP
        -- A holder's pid, or NULL for a prepared transaction (no backend).
        SELECT array_agg(k.pid) INTO v_pids FROM pg_locks k
         WHERE k.locktype = 'transactionid' AND k.mode = 'ExclusiveLock' AND k.granted
           AND k.transactionid::text = v_xid;
        IF v_pids IS NULL AND v_xid <> '0' THEN
            BEGIN
                SELECT array_agg(k.pid) INTO v_pids
                  FROM pg_get_multixact_members(v_xid::xid) m
                  JOIN pg_locks k ON k.locktype = 'transactionid'
                   AND k.mode = 'ExclusiveLock' AND k.granted AND k.transactionid = m.xid;
            EXCEPTION WHEN OTHERS THEN
                v_pids := NULL; -- not a MultiXact (or one long gone)
            END;
        END IF;
        IF v_pids IS NULL THEN
            v_free := v_free + 1;
        ELSIF array_position(v_pids, NULL) IS NOT NULL THEN
            verdict := CASE WHEN verdict = 'claim' THEN verdict ELSE 'wait' END;
            note := concat_ws('; ', note, format('prepared transaction %s', v_xid));
        ELSE
            v_holders := v_holders || v_pids;
        END IF;
    END LOOP;
    IF v_free > 0 THEN
        -- Matching rows that nobody holds (released or arrived since the claim).
        verdict := 'claim';
    END IF;
    FOR h IN SELECT a.pid, a.backend_start FROM pg_stat_activity a
              WHERE a.pid = ANY (v_holders) AND a.pid <> pg_backend_pid()
    LOOP
        -- A live sibling: leave its rows to it.
        CONTINUE WHEN EXISTS (SELECT 1 FROM batch_lock l
              JOIN batch_step_execution s ON s.lock_name = l.lock_name
               AND s.fencing_token = l.fencing_token
             WHERE s.job_execution_id = p_job_execution_id AND s.partition_index IS NOT NULL
               AND s.status = 'STARTED' AND batch_lock_is_held(l.released, l.locked_until)
               AND l.owner_backend_pid = h.pid AND l.owner_backend_start = h.backend_start);
        -- A claimant of this job whose partition lock lapsed: end it.
        SELECT l.lock_name, l.owner_id INTO e FROM batch_lock l
          JOIN batch_step_execution s ON s.lock_name = l.lock_name
          JOIN batch_job_execution x ON x.job_execution_id = s.job_execution_id
          JOIN batch_job_instance i ON i.job_instance_id = x.job_instance_id
         WHERE i.job_name = v_job AND s.partition_index IS NOT NULL AND NOT l.released
           AND l.locked_until < batch_now()
           AND l.owner_backend_pid = h.pid AND l.owner_backend_start = h.backend_start
         LIMIT 1;
        IF FOUND THEN
            SELECT * INTO e FROM batch_lock_end_session(h.pid, h.backend_start);
            IF e.ended THEN
                verdict := 'claim';
                note := concat_ws('; ', note, e.note);
                CONTINUE;
            END IF;
        END IF;
        IF verdict <> 'claim' THEN
            verdict := 'wait';
        END IF;
        note := concat_ws('; ', note, format('session %s (%s)', h.pid,
            coalesce((SELECT nullif(a.application_name, '') FROM pg_stat_activity a
                       WHERE a.pid = h.pid), 'no application name')));
    END LOOP;
    -- A holder listed in pg_locks that ended before pg_stat_activity was
    -- read has let its rows go: claim again rather than call it the end.
    IF verdict = 'done' AND EXISTS (SELECT 1 FROM unnest(v_holders) p
         WHERE p <> pg_backend_pid()
           AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = p)) THEN
        verdict := 'claim';
    END IF;
END
$$;
