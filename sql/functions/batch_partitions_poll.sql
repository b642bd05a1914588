-- The manager's view of its partitions, and its one duty towards them: while
-- the job execution is being stopped, partitions that nobody runs (never
-- claimed, or their claimant's lease lapsed) end STOPPED here, since no
-- worker will claim them any more; their lapsed claimants' sessions are ended
-- first (a frozen one would keep its rows locked from the restart), and their
-- lock rows removed.
CREATE OR REPLACE FUNCTION batch_partitions_poll(p_manager_step_execution_id bigint,
    OUT job_status varchar, OUT total int, OUT completed int, OUT failed int,
    OUT stopped int, OUT running int, OUT open int,
    OUT read_count bigint, OUT write_count bigint, OUT filter_count bigint,
    OUT commit_count bigint, OUT read_skip_count bigint, OUT write_skip_count bigint,
    OUT process_skip_count bigint, OUT rollback_count bigint,
    OUT duplicate_target_write_count bigint, OUT first_failure text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    v_ids bigint[];
BEGIN
    SELECT e.status INTO job_status FROM batch_step_execution m
      JOIN batch_job_execution e USING (job_execution_id)
     WHERE m.step_execution_id = p_manager_step_execution_id;
    IF job_status = 'STOPPING' THEN
        SELECT array_agg(x.step_execution_id) INTO v_ids FROM batch_step_execution x
         WHERE x.manager_step_execution_id = p_manager_step_execution_id
           AND x.status IN ('STARTING', 'STARTED')
           AND (x.lock_name IS NULL OR NOT EXISTS (SELECT 1 FROM batch_lock l
                 WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
                   AND batch_lock_is_held(l.released, l.locked_until)));
    END IF;
    IF v_ids IS NOT NULL THEN
        PERFORM batch_partition_claimants_end(v_ids, true);
        UPDATE batch_step_execution x
           SET status = 'STOPPED', exit_code = 'STOPPED',
               exit_message = 'stopped before a worker ran it',
               end_time = batch_now(), last_updated = batch_now(),
               version = x.version + 1
         WHERE x.step_execution_id = ANY (v_ids)
           AND x.status IN ('STARTING', 'STARTED')
           AND (x.lock_name IS NULL OR NOT EXISTS (SELECT 1 FROM batch_lock l
                 WHERE l.lock_name = x.lock_name AND l.fencing_token = x.fencing_token
                   AND batch_lock_is_held(l.released, l.locked_until)));
        PERFORM batch_partition_locks_drop(v_ids, 'stopped while its claimant''s lease lapsed');
    END IF;
    SELECT count(*), count(*) FILTER (WHERE x.status = 'COMPLETED'),
           count(*) FILTER (WHERE x.status IN ('FAILED', 'ABANDONED', 'UNKNOWN')),
           count(*) FILTER (WHERE x.status = 'STOPPED'),
           count(*) FILTER (WHERE x.status IN ('STARTED', 'STOPPING')),
           count(*) FILTER (WHERE x.status = 'STARTING'),
           coalesce(sum(x.read_count), 0), coalesce(sum(x.write_count), 0),
           coalesce(sum(x.filter_count), 0), coalesce(sum(x.commit_count), 0),
           coalesce(sum(x.read_skip_count), 0), coalesce(sum(x.write_skip_count), 0),
           coalesce(sum(x.process_skip_count), 0), coalesce(sum(x.rollback_count), 0),
           coalesce(sum(x.duplicate_target_write_count), 0),
           (array_agg(x.step_name || ': ' || x.exit_message ORDER BY x.partition_index)
              FILTER (WHERE x.status IN ('FAILED', 'ABANDONED', 'UNKNOWN')))[1]
      INTO total, completed, failed, stopped, running, open, read_count, write_count,
           filter_count, commit_count, read_skip_count, write_skip_count,
           process_skip_count, rollback_count, duplicate_target_write_count, first_failure
      FROM batch_step_execution x
     WHERE x.manager_step_execution_id = p_manager_step_execution_id;
    -- The manager's own row shows the running totals (`show`, a dashboard);
    -- written only when they moved, at most once per poll.
    UPDATE batch_step_execution m
       SET read_count = batch_partitions_poll.read_count,
           write_count = batch_partitions_poll.write_count,
           filter_count = batch_partitions_poll.filter_count,
           commit_count = batch_partitions_poll.commit_count,
           read_skip_count = batch_partitions_poll.read_skip_count,
           write_skip_count = batch_partitions_poll.write_skip_count,
           process_skip_count = batch_partitions_poll.process_skip_count,
           duplicate_target_write_count = batch_partitions_poll.duplicate_target_write_count,
           last_updated = batch_now()
     WHERE m.step_execution_id = p_manager_step_execution_id AND m.status = 'STARTED'
       AND (m.read_count, m.write_count, m.commit_count, m.filter_count)
           IS DISTINCT FROM (batch_partitions_poll.read_count, batch_partitions_poll.write_count,
                             batch_partitions_poll.commit_count,
                             batch_partitions_poll.filter_count);
END
$$;
