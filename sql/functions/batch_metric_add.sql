-- (numeric deltas: sums of bigint columns are numeric)
CREATE OR REPLACE FUNCTION batch_metric_add(p_metric varchar, p_subject varchar, p_delta numeric)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_delta IS NULL OR p_delta = 0 THEN
        RETURN;
    END IF;
    INSERT INTO batch_metric_counter AS c (metric, subject, shard, value)
    VALUES (p_metric, coalesce(p_subject, ''), batch_counter_shard(), p_delta::bigint)
    ON CONFLICT (metric, subject, shard) DO UPDATE SET value = c.value + excluded.value;
END
$$;
