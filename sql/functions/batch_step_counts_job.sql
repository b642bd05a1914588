-- As batch_step_counts_add, for a job known by name.
CREATE OR REPLACE FUNCTION batch_step_counts_job(v_job varchar, p_sign int,
    p_read numeric, p_write numeric, p_skip numeric, p_filter numeric, p_commit numeric,
    p_rollback numeric, p_duplicate numeric)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    PERFORM batch_metric_add('items_read_count', v_job, p_sign * p_read);
    PERFORM batch_metric_add('items_written_count', v_job, p_sign * p_write);
    PERFORM batch_metric_add('items_skipped_count', v_job, p_sign * p_skip);
    PERFORM batch_metric_add('items_filtered_count', v_job, p_sign * p_filter);
    PERFORM batch_metric_add('chunk_commit_count', v_job, p_sign * p_commit);
    PERFORM batch_metric_add('chunk_rollback_count', v_job, p_sign * p_rollback);
    PERFORM batch_metric_add('duplicate_target_write_count', v_job, p_sign * p_duplicate);
END
$$;
