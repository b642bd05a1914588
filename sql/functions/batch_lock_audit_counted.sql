-- Every audit row, whoever inserts it (the lock functions, the engine's
-- FENCED / HEARTBEAT_FAILED / ERROR rows): counted in the same transaction,
-- once per statement (a row trigger would update one counter row once per
-- row, and many updates of one row in one transaction cost quadratic time).
-- A bypass is a force-unlock after which the next taking of the same lock
-- succeeded; only takings and force-unlocks are ordered. Takeovers are also
-- counted by the lock's kind (a job's lock, a partition's) and reason (its
-- lease expired, its owner's process was seen dead), subject 'KIND:REASON';
-- fenced chunks also by job (the execution's), subject the job's name.
CREATE OR REPLACE FUNCTION batch_lock_audit_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT count(*) FILTER (WHERE n.outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
                        'OWNER_DEAD_TAKEOVER')) AS ok,
                    count(*) FILTER (WHERE n.outcome IN ('SKIPPED_HELD', 'ERROR')) AS failed,
                    count(*) FILTER (WHERE n.outcome = 'LEASE_EXPIRED_TAKEOVER') AS expired,
                    count(*) FILTER (WHERE n.outcome = 'HEARTBEAT_FAILED') AS hb,
                    count(*) FILTER (WHERE n.outcome = 'FENCED') AS fenced,
                    (SELECT count(*) FROM (
                       SELECT t.outcome, coalesce(lag(t.outcome) OVER (PARTITION BY t.lock_name
                                  ORDER BY t.audit_id),
                              -- the first of its name in the statement: the one before
                              (SELECT a.outcome FROM batch_lock_audit a
                                WHERE a.lock_name = t.lock_name AND a.audit_id < t.audit_id
                                  AND a.outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
                                                    'OWNER_DEAD_TAKEOVER', 'FORCE_UNLOCKED')
                                ORDER BY a.audit_id DESC LIMIT 1)) AS prev
                         FROM new_rows t
                        WHERE t.outcome IN ('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER',
                                            'OWNER_DEAD_TAKEOVER', 'FORCE_UNLOCKED')) x
                      WHERE x.outcome <> 'FORCE_UNLOCKED' AND x.prev = 'FORCE_UNLOCKED') AS bypass
               FROM new_rows n LOOP
        PERFORM batch_metric_add('lock_acquire_success_count', '', r.ok);
        PERFORM batch_metric_add('lock_acquire_failed_count', '', r.failed);
        PERFORM batch_metric_add('lock_lease_expired_count', '', r.expired);
        PERFORM batch_metric_add('heartbeat_failure_count', '', r.hb);
        PERFORM batch_metric_add('fenced_chunk_count', '', r.fenced);
        PERFORM batch_metric_add('manual_rerun_lock_bypass_count', '', r.bypass);
    END LOOP;
    FOR r IN SELECT CASE WHEN n.lock_name LIKE 'cbatch.partition:%' THEN 'partition'
                         ELSE 'job' END
                    || CASE n.outcome WHEN 'LEASE_EXPIRED_TAKEOVER' THEN ':lease_expired'
                                      ELSE ':owner_dead' END AS subject, count(*) AS n
               FROM new_rows n
              WHERE n.outcome IN ('LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER')
              GROUP BY 1 LOOP
        PERFORM batch_metric_add('lock_takeover_count', r.subject, r.n);
    END LOOP;
    FOR r IN SELECT i.job_name, count(*) AS n
               FROM new_rows n
               JOIN batch_job_execution e ON e.job_execution_id = n.job_execution_id
               JOIN batch_job_instance i ON i.job_instance_id = e.job_instance_id
              WHERE n.outcome = 'FENCED'
              GROUP BY i.job_name LOOP
        PERFORM batch_metric_add('job_fenced_chunk_count', r.job_name, r.n);
    END LOOP;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_lock_audit_counted_tg ON batch_lock_audit;
CREATE TRIGGER batch_lock_audit_counted_tg AFTER INSERT ON batch_lock_audit
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_lock_audit_counted();
