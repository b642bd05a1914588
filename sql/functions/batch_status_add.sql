-- Add p_delta to the count of p_kind ('job' or 'schedule') p_subject in status p_status.
CREATE OR REPLACE FUNCTION batch_status_add(p_kind varchar, p_subject varchar, p_status varchar,
    p_delta numeric)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_delta IS NULL OR p_delta = 0 OR p_subject IS NULL OR p_status IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO batch_status_count AS c (kind, subject, status, shard, n)
    VALUES (p_kind, p_subject, p_status, batch_counter_shard(), p_delta::bigint)
    ON CONFLICT (kind, subject, status, shard) DO UPDATE SET n = c.n + excluded.n;
END
$$;
