-- The work-queue reader found no unlocked row matching its queue, though
-- matching rows exist (their lockers' transaction ids: p_xids, the rows'
-- xmax). End of input only when every such row is held by a live sibling
-- partition of execution p_job_execution_id (it will commit them, or its
-- partition is reclaimed and they are claimed again). A holder whose session
-- is recorded on a partition lock of this job that is no longer live (lapsed,
-- not released) is a frozen or lost claimant: its session is ended, and the
-- reader claims again. Any other holder (another job, a session nobody
-- recorded) is waited for.
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
    FOR h IN SELECT DISTINCT k.pid, a.backend_start
               FROM pg_locks k
               JOIN pg_stat_activity a ON a.pid = k.pid
              WHERE k.locktype = 'transactionid' AND k.mode = 'ExclusiveLock' AND k.granted
                AND k.transactionid::text = ANY (p_xids) AND k.pid <> pg_backend_pid()
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
           AND l.locked_until < clock_timestamp()
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
    IF verdict = 'done' AND NOT EXISTS (SELECT 1 FROM pg_locks k
         WHERE k.locktype = 'transactionid' AND k.transactionid::text = ANY (p_xids)) THEN
        -- No transaction holds them now: they were let go since the claim.
        verdict := 'claim';
    END IF;
END
$$;
