-- A repository of N executions shaped like the ones cbatch writes, set-based
-- (bench/growth.sh; tests/integration/test_scale_plans.c). Run on an
-- initialized, empty repository with the setting cbatch_bench.executions = N:
--
--   PGOPTIONS='-c cbatch_bench.executions=100000' psql -f bench/growth_gen.sql
--
-- Execution i (1..N), 2 minutes apart and ending now (1M: 3.8 years):
--   job i % 40: hourly_00..hourly_29 and daily_30..daily_34 (scheduled, one
--   firing with a FIRED and a FINISHED event each), adhoc_35..adhoc_37 and
--   ledger (the example job, so that the benchmark can run it on top), and
--   ledger_part (a manager step and 4 partitions, each with its own lock row,
--   released, as partitions leave them; the ad-hoc ones also leave a lock
--   row per run, their lock name carrying a parameter);
--   its own instance; parameters run.id (long, identifying, counting per job)
--   and fire.time; a job context; steps with contexts; audit ACQUIRED and
--   RELEASED; COMPLETED, every 50th FAILED, every 997th STOPPED (a rare
--   job/status pair), the newest two STARTED (running, holding their lock).
-- The triggers that keep the counters run as they do for real writes (once
-- per statement). ANALYZE at the end.

SET synchronous_commit = off;
CREATE TEMP TABLE g AS
SELECT i, CASE WHEN i % 40 < 30 THEN 'hourly_' || lpad((i % 40)::text, 2, '0')
               WHEN i % 40 < 35 THEN 'daily_' || (i % 40)
               WHEN i % 40 < 38 THEN 'adhoc_' || (i % 40)
               WHEN i % 40 = 38 THEN 'ledger'
               ELSE 'ledger_part' END AS job,
       i % 40 AS j,
       CASE WHEN i > n - 2 THEN 'STARTED' WHEN i % 997 = 0 THEN 'STOPPED'
            WHEN i % 50 = 0 THEN 'FAILED' ELSE 'COMPLETED' END AS status,
       now() - (n - i) * interval '2 minutes' AS t
  FROM (SELECT current_setting('cbatch_bench.executions')::bigint AS n) c,
       generate_series(1, current_setting('cbatch_bench.executions')::bigint) i;

INSERT INTO batch_job_instance (job_instance_id, job_name, job_key, create_time)
SELECT i, job, md5(i::text), t FROM g;

INSERT INTO batch_job_execution (job_execution_id, job_instance_id, create_time, start_time,
    end_time, status, exit_code, last_updated, owner_id, heartbeat_time, lock_name,
    fencing_token)
SELECT i, i, t, t + interval '1 s', CASE WHEN status <> 'STARTED' THEN t + interval '31 s' END,
       status, CASE WHEN status = 'STARTED' THEN 'UNKNOWN' ELSE status END,
       t + interval '31 s', 'bench-host:' || (1000 + i % 30000) || ':x', t + interval '31 s',
       'cbatch.job:' || job, i
  FROM g;

INSERT INTO batch_job_execution_params (job_execution_id, parameter_name, parameter_type,
    parameter_value, identifying)
SELECT i, 'run.id', 'long', (i / 40 + 1)::text, true FROM g
UNION ALL
SELECT i, 'fire.time', 'string', to_char(t, 'YYYY-MM-DD"T"HH24:MI:SS'), false FROM g;

INSERT INTO batch_job_execution_context (job_execution_id, serialized_context)
SELECT i, jsonb_build_object('rows', i % 1000, 'batch', 'x') FROM g;

-- One step per execution (the ledger's: a manager and 4 partitions).
INSERT INTO batch_step_execution (step_name, job_execution_id, start_time, end_time, status,
    commit_count, read_count, write_count, read_skip_count, filter_count, rollback_count,
    exit_code)
SELECT CASE WHEN j = 39 THEN 'ledger' ELSE 'load' END, i, t + interval '1 s',
       CASE WHEN status <> 'STARTED' THEN t + interval '30 s' END,
       status, CASE WHEN j = 39 THEN 0 ELSE 5 END, CASE WHEN j = 39 THEN 0 ELSE 500 END,
       CASE WHEN j = 39 THEN 0 ELSE 499 END, (j <> 39 AND i % 7 = 0)::int, 0,
       (status = 'FAILED')::int,
       CASE WHEN status = 'STARTED' THEN 'EXECUTING' ELSE status END
  FROM g;

INSERT INTO batch_step_execution (step_name, job_execution_id, start_time, end_time, status,
    commit_count, read_count, write_count, exit_code, manager_step_execution_id,
    partition_index, owner_id, worker, lock_name, fencing_token, claim_count)
SELECT 'ledger:partition' || k, s.job_execution_id, s.start_time, s.end_time, s.status, 3, 250,
       250, CASE WHEN s.status = 'STARTED' THEN 'EXECUTING' ELSE s.status END,
       s.step_execution_id, k, 'bench-host:' || (2000 + k) || ':x',
       'bench-host/' || (2000 + (s.job_execution_id / 40) % 50) || '/' || k,
       'cbatch.partition:' || s.step_execution_id || ':' || k, 1, 1
  FROM batch_step_execution s CROSS JOIN generate_series(0, 3) k
 WHERE s.step_name = 'ledger';

INSERT INTO batch_step_execution_context (step_execution_id, serialized_context)
SELECT step_execution_id, jsonb_build_object('read', read_count, 'last', jsonb_build_array(42))
  FROM batch_step_execution;

INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, job_execution_id,
    event_time)
SELECT 'cbatch.job:' || job, 'bench-host:' || (1000 + i % 30000) || ':x', o, i,
       CASE WHEN o = 'RELEASED' THEN i END,
       t + CASE WHEN o = 'RELEASED' THEN interval '31 s' ELSE interval '0 s' END
  FROM g CROSS JOIN (VALUES ('ACQUIRED'), ('RELEASED')) a(o)
 WHERE o = 'ACQUIRED' OR status <> 'STARTED'
 ORDER BY i, o;

-- A lock row per job name (held by the running ones), per partition, and
-- per run of the ad-hoc jobs (their lock name carries a parameter).
INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at, updated_at,
    released, job_execution_id)
SELECT DISTINCT ON (job) 'cbatch.job:' || job, 'bench-host:' || (1000 + i % 30000) || ':x', i,
       CASE WHEN status = 'STARTED' THEN clock_timestamp() + interval '10 minutes'
            ELSE t + interval '31 s' END,
       t, t + interval '31 s', status <> 'STARTED', i
  FROM g ORDER BY job, i DESC;
INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at, updated_at,
    released, job_execution_id)
SELECT lock_name, owner_id, 1,
       coalesce(end_time, clock_timestamp() + interval '10 minutes'), start_time,
       coalesce(end_time, start_time), end_time IS NOT NULL, job_execution_id
  FROM batch_step_execution WHERE partition_index IS NOT NULL;
INSERT INTO batch_lock (lock_name, owner_id, fencing_token, locked_until, locked_at, updated_at,
    released, job_execution_id)
SELECT 'cbatch.job:' || job || ':' || i, 'bench-host:' || (1000 + i % 30000) || ':x', 1,
       t + interval '31 s', t, t + interval '31 s', true, i
  FROM g WHERE j BETWEEN 35 AND 38;
SELECT setval('batch_lock_token_seq', (SELECT max(fencing_token) + 1 FROM batch_lock));

-- The schedules, their firings and events.
INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, job_name, next_fire_time,
    last_fire_time)
SELECT job || '_schedule', CASE WHEN j < 30 THEN '0 * * * *' ELSE '0 2 * * *' END, 'UTC', job,
       now() + interval '1 hour', now()
  FROM (SELECT DISTINCT job, j FROM g WHERE j < 35) s;

INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, claimed_at, status,
    job_name, job_key, pid, job_execution_id, exit_code, exit_status, finished_at)
SELECT s.schedule_id, g.t, 'SCHEDULED', 'node-' || (g.i % 3), g.t,
       CASE WHEN g.status = 'STARTED' THEN 'LAUNCHED' ELSE 'FINISHED' END, g.job, md5(g.i::text),
       1000 + g.i % 30000, g.i, CASE WHEN g.status = 'COMPLETED' THEN 0 ELSE 1 END,
       CASE WHEN g.status = 'STARTED' THEN NULL ELSE g.status END,
       CASE WHEN g.status <> 'STARTED' THEN g.t + interval '31 s' END
  FROM g JOIN batch_schedule s ON s.job_name = g.job;

INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
    job_execution_id, recorded_at)
SELECT f.schedule_id, f.fire_time, f.node_id, o, f.firing_id, f.job_execution_id, f.claimed_at
  FROM batch_schedule_firing f CROSS JOIN (VALUES ('FIRED'), ('FINISHED')) e(o)
 WHERE o = 'FIRED' OR f.status = 'FINISHED'
 ORDER BY f.firing_id, o DESC;

SELECT setval(pg_get_serial_sequence('batch_job_instance', 'job_instance_id'),
              (SELECT max(job_instance_id) FROM batch_job_instance));
SELECT setval(pg_get_serial_sequence('batch_job_execution', 'job_execution_id'),
              (SELECT max(job_execution_id) FROM batch_job_execution));
DROP TABLE g;
ANALYZE;
