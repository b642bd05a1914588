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
-- needs: batch_worker_host (its seeds call it)

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

-- ---- partition items per worker host ----------------------------------------------

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
