-- 019: the operators' counters agree with the history (issue 28).
--
-- schedule_orphaned_count used to follow the firings ORPHANED now, so it fell
-- back when a restart finished one and read 0 beside ORPHANED events in the
-- history. It counts events now (batch_firing_counted): each firing that was
-- ever ORPHANED, as its ORPHANED event says (or, where cleanup removed events,
-- at least the firings ORPHANED today). The counters added with it start from
-- the history kept: takeovers by lock kind and reason, fenced chunks by job
-- (the lock audit), recovery restarts, recoveries given up and claims lost to
-- another node (the schedule events). Counters are kept in shards; these
-- seeds go to shard 0, which every shard's sum includes.
DELETE FROM batch_metric_counter
 WHERE metric IN ('schedule_orphaned_count', 'lock_takeover_count', 'job_fenced_chunk_count',
                  'schedule_recovery_restart_count', 'schedule_not_recovered_count',
                  'schedule_claim_lost_count');

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT 'schedule_orphaned_count', s.schedule_id::text, 0,
       greatest((SELECT count(*) FROM batch_schedule_event v
                  WHERE v.schedule_id = s.schedule_id AND v.outcome = 'ORPHANED'),
                (SELECT count(*) FROM batch_schedule_firing f
                  WHERE f.schedule_id = s.schedule_id AND f.status = 'ORPHANED'))
  FROM batch_schedule s;

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT 'lock_takeover_count',
       CASE WHEN a.lock_name LIKE 'cbatch.partition:%' THEN 'partition' ELSE 'job' END
       || CASE a.outcome WHEN 'LEASE_EXPIRED_TAKEOVER' THEN ':lease_expired'
                         ELSE ':owner_dead' END, 0, count(*)
  FROM batch_lock_audit a
 WHERE a.outcome IN ('LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER')
 GROUP BY 2;

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT 'job_fenced_chunk_count', i.job_name, 0, count(*)
  FROM batch_lock_audit a
  JOIN batch_job_execution e ON e.job_execution_id = a.job_execution_id
  JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id
 WHERE a.outcome = 'FENCED'
 GROUP BY i.job_name;

INSERT INTO batch_metric_counter (metric, subject, shard, value)
SELECT m.metric, v.schedule_id::text, 0, count(*)
  FROM batch_schedule_event v
  JOIN (VALUES ('RESTARTED', 'schedule_recovery_restart_count'),
               ('NOT_RECOVERED', 'schedule_not_recovered_count'),
               ('SKIPPED_CLAIMED', 'schedule_claim_lost_count')) m(outcome, metric)
    ON m.outcome = v.outcome
 GROUP BY m.metric, v.schedule_id;
