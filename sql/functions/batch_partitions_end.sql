-- End the manager: its counts are the sums of its partitions'; partitions
-- still open (the manager gives up: its lock was lost, the repository failed)
-- end FAILED with it, their version moved on, so that no worker commits
-- another chunk of an execution that has ended. They end only after their
-- claimants' sessions ended (a frozen claimant keeps its chunk's rows locked,
-- a live one could not commit another chunk anyway), and every partition's
-- lock row goes with them.
CREATE OR REPLACE FUNCTION batch_partitions_end(p_manager_step_execution_id bigint,
    p_status varchar, p_exit_code varchar, p_exit_message varchar)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_open bigint[];
BEGIN
    SELECT array_agg(x.step_execution_id) INTO v_open FROM batch_step_execution x
     WHERE x.manager_step_execution_id = p_manager_step_execution_id
       AND batch_status_is_live(x.status);
    IF v_open IS NOT NULL THEN
        PERFORM batch_partition_claimants_end(v_open, false);
    END IF;
    UPDATE batch_step_execution x
       SET status = 'FAILED', exit_code = 'FAILED',
           exit_message = 'manager step ended: ' || left(p_exit_message, 2400),
           end_time = batch_now(), last_updated = batch_now(),
           version = x.version + 1
     WHERE x.manager_step_execution_id = p_manager_step_execution_id
       AND batch_status_is_live(x.status);
    IF v_open IS NOT NULL THEN
        PERFORM batch_partition_locks_drop(v_open, 'its manager step ended');
    END IF;
    UPDATE batch_step_execution m
       SET status = p_status, exit_code = p_exit_code, exit_message = left(p_exit_message, 2500),
           read_count = s.r, write_count = s.w, filter_count = s.f, commit_count = s.c,
           read_skip_count = s.rs, write_skip_count = s.ws, process_skip_count = s.ps,
           rollback_count = s.rb, duplicate_target_write_count = s.d,
           end_time = batch_now(), last_updated = batch_now(),
           version = m.version + 1
      FROM (SELECT coalesce(sum(read_count), 0) r, coalesce(sum(write_count), 0) w,
                   coalesce(sum(filter_count), 0) f, coalesce(sum(commit_count), 0) c,
                   coalesce(sum(read_skip_count), 0) rs, coalesce(sum(write_skip_count), 0) ws,
                   coalesce(sum(process_skip_count), 0) ps, coalesce(sum(rollback_count), 0) rb,
                   coalesce(sum(duplicate_target_write_count), 0) d
              FROM batch_step_execution
             WHERE manager_step_execution_id = p_manager_step_execution_id) s
     WHERE m.step_execution_id = p_manager_step_execution_id;
END
$$;
