-- cbatch job repository: years of history cost nothing to read.
-- Applied by `cbatch schema init` after the earlier files, inside the same transaction.
--
-- What metrics, the jobs overview, `schedule list` and `run --next` show used
-- to be recounted from the whole history on every read. Now:
--  - batch_metric_counter holds the counters metrics expose. They are added
--    to by the statements that change what they count, in the same
--    transaction (triggers below), and nothing subtracts from them when
--    cleanup removes history: a counter never goes backwards. Each is split
--    over a few shard rows (by backend pid) so that concurrent transactions
--    (partitions ending together, locks taken together) do not queue on one
--    row; a reader sums the shards.
--  - Item counts of a step execution are added when the step ends (its
--    end_time is set), not per chunk: the chunk checkpoint runs no trigger
--    (the WHEN clause is false while end_time stays NULL). A reader adds the
--    counts of steps that have not ended, through a partial index.
--  - batch_job_summary holds, per job name, the newest execution id and the
--    largest run.id ever given (high-water marks), and batch_status_count
--    the number of executions (per job) and firings (per schedule) in each
--    status that are in the repository (these go down when history goes).
-- The seeds below count the existing history once.
-- needs: batch_firing_counts (its seeds call it)

CREATE TABLE batch_metric_counter (
    metric  varchar(64)  NOT NULL,
    subject varchar(200) NOT NULL DEFAULT '', -- job name, schedule id, or '' for none
    shard   smallint     NOT NULL,
    value   bigint       NOT NULL,
    PRIMARY KEY (metric, subject, shard)
);

CREATE TABLE batch_job_summary (
    job_name         varchar(100) PRIMARY KEY,
    last_execution_id bigint,
    max_run_id       bigint
);

CREATE TABLE batch_status_count (
    kind    varchar(10)  NOT NULL, -- 'job': executions by job name; 'schedule': firings by schedule id
    subject varchar(200) NOT NULL,
    status  varchar(16)  NOT NULL,
    shard   smallint     NOT NULL,
    n       bigint       NOT NULL,
    PRIMARY KEY (kind, subject, status, shard)
);

-- ---- lock outcomes ----------------------------------------------------------

-- The lock listing: held locks (a partial index on columns a checkpoint
-- never changes, so its updates stay HOT), and the names active recently
-- (from the audit, by time).
CREATE INDEX batch_lock_held_ix ON batch_lock (lock_name) WHERE NOT released;
CREATE INDEX batch_lock_audit_time_ix ON batch_lock_audit (event_time);

-- The previous taking or force-unlock of a lock, for the bypass counter.
CREATE INDEX batch_lock_audit_name_id_ix ON batch_lock_audit (lock_name, audit_id);

-- ---- item counts --------------------------------------------------------------

-- Steps that have not ended: what a reader adds to the counters (few rows,
-- however old the repository). end_time is not changed by a checkpoint, so
-- its updates stay HOT.
CREATE INDEX batch_step_execution_open_ix ON batch_step_execution (job_execution_id)
    WHERE end_time IS NULL;

-- ---- executions: status counts and high-water marks ----------------------------

-- A job's executions newest first whatever their instance, and a rare
-- (job, status) pair or status found without walking the whole history.
CREATE INDEX batch_job_instance_name_ix ON batch_job_instance (job_name, job_instance_id);
CREATE INDEX batch_job_execution_status_ix ON batch_job_execution (status, job_execution_id);

-- ---- schedule firings ------------------------------------------------------------

-- ---- seeds: the existing history, counted once -------------------------------------

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT m, '', 0, v FROM (
    SELECT count(*) FILTER (WHERE outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
               'OWNER_DEAD_TAKEOVER')) AS ok,
           count(*) FILTER (WHERE outcome IN ('SKIPPED_HELD', 'ERROR')) AS failed,
           count(*) FILTER (WHERE outcome = 'LEASE_EXPIRED_TAKEOVER') AS expired,
           count(*) FILTER (WHERE outcome = 'HEARTBEAT_FAILED') AS hb,
           count(*) FILTER (WHERE outcome = 'FENCED') AS fenced,
           count(*) FILTER (WHERE outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
               'OWNER_DEAD_TAKEOVER') AND prev = 'FORCE_UNLOCKED') AS bypass
      FROM (SELECT outcome, CASE WHEN outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
                   'OWNER_DEAD_TAKEOVER', 'FORCE_UNLOCKED') THEN
                   lag(outcome) OVER (PARTITION BY lock_name, outcome IN ('ACQUIRED',
                   'LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER', 'FORCE_UNLOCKED')
                   ORDER BY audit_id) END AS prev
              FROM batch_lock_audit) a) c
CROSS JOIN LATERAL (VALUES ('lock_acquire_success_count', c.ok),
    ('lock_acquire_failed_count', c.failed), ('lock_lease_expired_count', c.expired),
    ('heartbeat_failure_count', c.hb), ('fenced_chunk_count', c.fenced),
    ('manual_rerun_lock_bypass_count', c.bypass)) v(m, v)
WHERE v.v > 0;

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT v.m, s.job_name, 0, v.v FROM (
    SELECT i.job_name, sum(s.read_count) AS r, sum(s.write_count) AS w,
           sum(s.read_skip_count + s.process_skip_count + s.write_skip_count) AS k,
           sum(s.filter_count) AS f, sum(s.commit_count) AS cm,
           sum(s.rollback_count) AS rb, sum(s.duplicate_target_write_count) AS d,
           sum(s.transition_conflict_count) AS tc
      FROM batch_step_execution s JOIN batch_job_execution e USING (job_execution_id)
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE s.end_time IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
                        WHERE w.manager_step_execution_id = s.step_execution_id)
     GROUP BY i.job_name) s
CROSS JOIN LATERAL (VALUES ('items_read_count', s.r), ('items_written_count', s.w),
    ('items_skipped_count', s.k), ('items_filtered_count', s.f),
    ('chunk_commit_count', s.cm), ('chunk_rollback_count', s.rb),
    ('duplicate_target_write_count', s.d), ('transition_conflict_count', s.tc)) v(m, v)
WHERE v.v <> 0;

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT v.m, s.schedule_id::text, 0, v.v FROM (
    SELECT f.schedule_id, sum(c.fired) AS fired, sum(c.missed) AS missed,
           sum(c.nolaunch) AS nolaunch, sum(c.orphaned) AS orphaned,
           sum(c.overlapped) AS overlapped
      FROM batch_schedule_firing f
     CROSS JOIN LATERAL batch_firing_counts(f.status, f.kind, f.missed_count) c
     GROUP BY f.schedule_id) s
CROSS JOIN LATERAL (VALUES ('schedule_fired_count', s.fired), ('schedule_missed_count', s.missed),
    ('schedule_failed_to_launch_count', s.nolaunch), ('schedule_orphaned_count', s.orphaned),
    ('schedule_skipped_overlap_count', s.overlapped)) v(m, v)
WHERE v.v <> 0;

INSERT INTO batch_job_summary (job_name, last_execution_id, max_run_id)
SELECT n.job_name,
       (SELECT max(e.job_execution_id) FROM batch_job_execution e
          JOIN batch_job_instance i USING (job_instance_id) WHERE i.job_name = n.job_name),
       (SELECT max(p.parameter_value::bigint) FROM batch_job_execution_params p
          JOIN batch_job_execution e USING (job_execution_id)
          JOIN batch_job_instance i USING (job_instance_id)
         WHERE i.job_name = n.job_name AND p.parameter_name = 'run.id'
           AND p.parameter_type = 'long' AND p.identifying
           AND p.parameter_value ~ '^[-+]?[0-9]{1,18}$')
  FROM (SELECT DISTINCT job_name FROM batch_job_instance) n;

INSERT INTO batch_status_count (kind, subject, status, shard, n)
SELECT 'job', i.job_name, e.status, 0, count(*)
  FROM batch_job_execution e JOIN batch_job_instance i USING (job_instance_id)
 GROUP BY i.job_name, e.status;

INSERT INTO batch_status_count (kind, subject, status, shard, n)
SELECT 'schedule', f.schedule_id::text, f.status, 0, count(*)
  FROM batch_schedule_firing f GROUP BY f.schedule_id, f.status;
