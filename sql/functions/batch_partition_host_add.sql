-- Add a partition's items to its job's counter for worker p_worker's host (sharded).
CREATE OR REPLACE FUNCTION batch_partition_host_add(p_job varchar, p_worker varchar, p_read bigint,
    p_write bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_job IS NULL OR p_worker IS NULL OR (p_read = 0 AND p_write = 0) THEN
        RETURN;
    END IF;
    INSERT INTO batch_partition_host_counter AS c (job_name, host, shard, read_count,
                                                   write_count)
    VALUES (p_job, batch_worker_host(p_worker), (pg_backend_pid() % 8)::smallint, p_read,
            p_write)
    ON CONFLICT (job_name, host, shard) DO UPDATE
       SET read_count = c.read_count + excluded.read_count,
           write_count = c.write_count + excluded.write_count;
END
$$;
