-- Claim one open partition: one that nobody has claimed yet, or whose
-- claimant's partition lock lapsed (lease expired or released), of a STARTED
-- job execution whose own owner is alive, optionally only of some jobs or of
-- one execution. The row is taken FOR UPDATE SKIP LOCKED, so concurrent
-- claimants never wait for each other and never take the same partition;
-- its lock is then acquired (or taken over, ending a frozen owner's session)
-- with batch_lock_acquire, and the step execution's version moves on, so the
-- old owner's next checkpoint is refused even before its lock is looked at.
-- p_dead_owners: claimants the caller found dead on its own host (their
-- process is gone): their partitions are taken over at once, without waiting
-- for the lease (audited OWNER_DEAD_TAKEOVER). No row: nothing to claim.
-- p_runnable: what the caller can run, a JSON array of {"job", "step",
-- "fingerprint"} ("step" null: the caller has the job but no partitioned
-- step in it). A partition is offered only when its job and manager step are
-- in it with the fingerprint its manager recorded (or the manager recorded
-- none). NULL (a caller that does not say): only partitions without a
-- fingerprint. A caller of any execution (p_job_execution_id NULL: a worker
-- process) is recorded in batch_partition_worker.
-- p_dead_managers: owners of executions the caller found dead on its own host;
-- their partitions are not offered.
CREATE OR REPLACE FUNCTION batch_partition_claim(p_owner_id varchar, p_worker varchar,
    p_lease_seconds double precision, p_job_names varchar[], p_job_execution_id bigint,
    p_dead_owners varchar[] DEFAULT NULL, p_runnable jsonb DEFAULT NULL,
    p_dead_managers varchar[] DEFAULT NULL)
RETURNS TABLE (step_execution_id bigint, job_execution_id bigint, job_instance_id bigint,
               job_name varchar, step_name varchar, manager_step_name varchar,
               partition_index int, lock_name varchar, fencing_token bigint, version bigint,
               outcome varchar, previous_owner varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    s record;
    g record;
    v_lock varchar;
    v_version bigint;
BEGIN
    -- The backstop for a frozen claimant whose session no path ended: an idle
    -- transaction loses its session (and its row locks) after 4 leases. Set
    -- on every claim, so that a reconnected session has it again.
    PERFORM set_config('idle_in_transaction_session_timeout',
                       round(p_lease_seconds * 4 * 1000)::text, false);
    IF p_runnable IS NOT NULL AND p_job_execution_id IS NULL AND NOT EXISTS (SELECT 1 FROM batch_partition_worker w
         WHERE w.owner_id = p_owner_id AND w.runs = p_runnable
           AND w.last_seen > batch_now() - interval '5 seconds') THEN
        INSERT INTO batch_partition_worker AS w (owner_id, worker, runs, last_seen)
        VALUES (p_owner_id, p_worker, p_runnable, batch_now())
        ON CONFLICT (owner_id) DO UPDATE
           SET worker = excluded.worker, runs = excluded.runs, last_seen = excluded.last_seen;
        DELETE FROM batch_partition_worker w
         WHERE w.last_seen < batch_now() - interval '1 day';
    END IF;
    SELECT x.step_execution_id AS id, x.job_execution_id AS exec_id,
           e.job_instance_id AS inst_id, i.job_name AS jname, x.step_name AS sname,
           m.step_name AS mname, x.partition_index AS pidx, x.owner_id AS prev
      INTO s
      FROM batch_step_execution x
      JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id
      JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id
      JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id
     WHERE x.partition_index IS NOT NULL AND x.status IN ('STARTING', 'STARTED')
       AND e.status = 'STARTED'
       AND (p_job_execution_id IS NULL OR x.job_execution_id = p_job_execution_id)
       AND (p_job_names IS NULL OR i.job_name = ANY (p_job_names))
       -- only what the caller's program can run, as its manager defined it
       AND CASE WHEN p_runnable IS NULL THEN m.step_fingerprint IS NULL
           ELSE EXISTS (SELECT 1 FROM jsonb_array_elements(p_runnable) AS r
                 WHERE r->>'job' = i.job_name AND r->>'step' = m.step_name
                   AND (m.step_fingerprint IS NULL
                        OR r->>'fingerprint' = m.step_fingerprint)) END
       -- the execution's own lock is alive (a dead manager's partitions wait
       -- for the restart, which buries them)
       AND (e.lock_name IS NULL OR EXISTS (SELECT 1 FROM batch_lock l
             WHERE l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token
               AND batch_lock_is_held(l.released, l.locked_until)))
       -- ... and its manager is not a process known to be gone
       AND (p_dead_managers IS NULL OR e.owner_id IS NULL
            OR NOT e.owner_id = ANY (p_dead_managers))
       AND (x.lock_name IS NULL OR x.owner_id = ANY (p_dead_owners)
            OR NOT EXISTS (SELECT 1 FROM batch_lock l
             WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
               AND batch_lock_is_held(l.released, l.locked_until)))
     ORDER BY x.step_execution_id
     LIMIT 1
       FOR UPDATE OF x SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_lock := 'cbatch.partition:' || s.id;
    SELECT * INTO g FROM batch_lock_acquire(v_lock, p_owner_id, p_lease_seconds,
        CASE WHEN s.prev = ANY (p_dead_owners) THEN s.prev END);
    IF g.fencing_token IS NULL THEN
        -- Its lease is still running after all (a clock tick): not ours.
        RETURN;
    END IF;
    UPDATE batch_lock l SET job_execution_id = s.exec_id WHERE l.lock_name = v_lock;
    UPDATE batch_step_execution x
       SET status = 'STARTED', start_time = coalesce(x.start_time, batch_now()),
           owner_id = p_owner_id, worker = p_worker, lock_name = v_lock,
           fencing_token = g.fencing_token, claim_count = x.claim_count + 1,
           version = x.version + 1, last_updated = batch_now()
     WHERE x.step_execution_id = s.id
    RETURNING x.version INTO v_version;
    RETURN QUERY SELECT s.id, s.exec_id, s.inst_id, s.jname, s.sname, s.mname, s.pidx, v_lock,
                        g.fencing_token, v_version, g.outcome, s.prev;
END
$$;
