-- Partitions written already ended: per statement.
CREATE OR REPLACE FUNCTION batch_partition_host_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.job_name, batch_worker_host(n.worker) AS host,
                    sum(n.read_count) AS rd, sum(n.write_count) AS wr
               FROM new_rows n JOIN batch_job_execution e USING (job_execution_id)
               JOIN batch_job_instance i USING (job_instance_id)
              WHERE n.partition_index IS NOT NULL AND n.end_time IS NOT NULL
                AND n.worker IS NOT NULL
              GROUP BY 1, 2 LOOP
        INSERT INTO batch_partition_host_counter AS c (job_name, host, shard, read_count,
                                                       write_count)
        VALUES (r.job_name, r.host, (pg_backend_pid() % 8)::smallint, r.rd, r.wr)
        ON CONFLICT (job_name, host, shard) DO UPDATE
           SET read_count = c.read_count + excluded.read_count,
               write_count = c.write_count + excluded.write_count;
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_partition_host_ins_tg ON batch_step_execution;
CREATE TRIGGER batch_partition_host_ins_tg AFTER INSERT ON batch_step_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_partition_host_inserted();
