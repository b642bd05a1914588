-- 014: what operators alert on first (issue 21, item 8), kept by the
-- statements that change it, so that `metrics` reads a few rows per job
-- however old the repository is:
--  - batch_job_outcome: per job, when its newest COMPLETED and FAILED
--    executions ended. High-water marks: cleanup never takes them back, so
--    "time since the last success" does not jump when history is removed.
--  - batch_partition_host_counter: items read and written by partitions per
--    job and worker host (the worker name without its /pid/thread: hosts are
--    few and stay, pids change with every process), added when a partition
--    ends, for its last claimant's host. Counters: nothing subtracts from
--    them when history goes, so a host's series never drops or goes back.
--    Each is split over a few shard rows (by backend pid) so that partitions
--    ending together do not queue on one row; a reader sums the shards.

CREATE TABLE batch_job_outcome (
    job_name          varchar(100) PRIMARY KEY,
    last_success_time timestamptz,
    last_failure_time timestamptz
);

CREATE TABLE batch_partition_host_counter (
    job_name    varchar(100) NOT NULL,
    host        varchar(200) NOT NULL,
    shard       smallint     NOT NULL,
    read_count  bigint       NOT NULL,
    write_count bigint       NOT NULL,
    PRIMARY KEY (job_name, host, shard)
);

-- ---- last success and failure ---------------------------------------------------

CREATE FUNCTION batch_job_outcome_note(p_job_instance_id bigint, p_status varchar,
    p_end timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    IF p_status NOT IN ('COMPLETED', 'FAILED') OR p_end IS NULL THEN
        RETURN;
    END IF;
    SELECT i.job_name INTO v_job FROM batch_job_instance i
     WHERE i.job_instance_id = p_job_instance_id;
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    -- (greatest ignores NULL: the other status's time stays)
    INSERT INTO batch_job_outcome AS o (job_name, last_success_time, last_failure_time)
    VALUES (v_job, CASE WHEN p_status = 'COMPLETED' THEN p_end END,
            CASE WHEN p_status = 'FAILED' THEN p_end END)
    ON CONFLICT (job_name) DO UPDATE
       SET last_success_time = greatest(o.last_success_time, excluded.last_success_time),
           last_failure_time = greatest(o.last_failure_time, excluded.last_failure_time);
END
$$;

-- An execution's end (a row trigger on the few updates that set a final
-- status; the chunk checkpoint's update sets neither column and runs none).
CREATE FUNCTION batch_job_outcome_tg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM batch_job_outcome_note(NEW.job_instance_id, NEW.status, NEW.end_time);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_job_outcome_upd_tg AFTER UPDATE OF status, end_time ON batch_job_execution
    FOR EACH ROW WHEN (NEW.status IN ('COMPLETED', 'FAILED') AND NEW.end_time IS NOT NULL
        AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.end_time IS DISTINCT FROM NEW.end_time))
    EXECUTE FUNCTION batch_job_outcome_tg();

-- Executions written already ended (imports, tests, generators): per
-- statement, one upsert per job however many rows.
CREATE FUNCTION batch_job_outcome_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO batch_job_outcome AS o (job_name, last_success_time, last_failure_time)
    SELECT i.job_name, max(n.end_time) FILTER (WHERE n.status = 'COMPLETED'),
           max(n.end_time) FILTER (WHERE n.status = 'FAILED')
      FROM new_rows n JOIN batch_job_instance i USING (job_instance_id)
     WHERE n.status IN ('COMPLETED', 'FAILED') AND n.end_time IS NOT NULL
     GROUP BY i.job_name
    ON CONFLICT (job_name) DO UPDATE
       SET last_success_time = greatest(o.last_success_time, excluded.last_success_time),
           last_failure_time = greatest(o.last_failure_time, excluded.last_failure_time);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_job_outcome_ins_tg AFTER INSERT ON batch_job_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_outcome_inserted();

-- ---- partition items per worker host ----------------------------------------------

-- "host/pid/thread" -> "host" (a host name may itself hold a slash).
CREATE FUNCTION batch_worker_host(p_worker varchar) RETURNS varchar
LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(p_worker, '/[^/]*/[^/]*$', '')
$$;

CREATE FUNCTION batch_partition_host_add(p_job varchar, p_worker varchar, p_read bigint,
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

-- A partition that ends adds its counts (of all its claims) for its last
-- claimant's host; one whose counts or claimant change after it ended adds
-- the difference.
CREATE FUNCTION batch_partition_host_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    SELECT i.job_name INTO v_job FROM batch_job_execution e
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE e.job_execution_id = NEW.job_execution_id;
    IF OLD.end_time IS NOT NULL THEN
        PERFORM batch_partition_host_add(v_job, OLD.worker, -OLD.read_count, -OLD.write_count);
    END IF;
    IF NEW.end_time IS NOT NULL THEN
        PERFORM batch_partition_host_add(v_job, NEW.worker, NEW.read_count, NEW.write_count);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_partition_host_upd_tg AFTER UPDATE ON batch_step_execution
    FOR EACH ROW WHEN (NEW.partition_index IS NOT NULL
        AND (OLD.end_time IS NOT NULL OR NEW.end_time IS NOT NULL)
        AND (OLD.end_time IS DISTINCT FROM NEW.end_time
             OR OLD.read_count <> NEW.read_count OR OLD.write_count <> NEW.write_count
             OR OLD.worker IS DISTINCT FROM NEW.worker))
    EXECUTE FUNCTION batch_partition_host_tg();

-- Partitions written already ended: per statement.
CREATE FUNCTION batch_partition_host_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER batch_partition_host_ins_tg AFTER INSERT ON batch_step_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_partition_host_inserted();

-- ---- seeds: the existing history, counted once -------------------------------------

INSERT INTO batch_job_outcome (job_name, last_success_time, last_failure_time)
SELECT i.job_name, max(e.end_time) FILTER (WHERE e.status = 'COMPLETED'),
       max(e.end_time) FILTER (WHERE e.status = 'FAILED')
  FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id)
 WHERE e.status IN ('COMPLETED', 'FAILED') AND e.end_time IS NOT NULL
 GROUP BY i.job_name;

INSERT INTO batch_partition_host_counter (job_name, host, shard, read_count, write_count)
SELECT i.job_name, batch_worker_host(s.worker), 0, sum(s.read_count), sum(s.write_count)
  FROM batch_step_execution s JOIN batch_job_execution e USING (job_execution_id)
  JOIN batch_job_instance i USING (job_instance_id)
 WHERE s.partition_index IS NOT NULL AND s.end_time IS NOT NULL AND s.worker IS NOT NULL
 GROUP BY 1, 2;
