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

-- The shard of this session: concurrent sessions mostly touch different rows.
CREATE FUNCTION batch_counter_shard() RETURNS smallint LANGUAGE sql STABLE AS $$
    SELECT (pg_backend_pid() % 8)::smallint
$$;

-- (numeric deltas: sums of bigint columns are numeric)
CREATE FUNCTION batch_metric_add(p_metric varchar, p_subject varchar, p_delta numeric)
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

CREATE FUNCTION batch_status_add(p_kind varchar, p_subject varchar, p_status varchar,
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

-- ---- lock outcomes ----------------------------------------------------------

-- The lock listing: held locks (a partial index on columns a checkpoint
-- never changes, so its updates stay HOT), and the names active recently
-- (from the audit, by time).
CREATE INDEX batch_lock_held_ix ON batch_lock (lock_name) WHERE NOT released;
CREATE INDEX batch_lock_audit_time_ix ON batch_lock_audit (event_time);

-- The previous taking or force-unlock of a lock, for the bypass counter.
CREATE INDEX batch_lock_audit_name_id_ix ON batch_lock_audit (lock_name, audit_id);

-- Every audit row, whoever inserts it (the lock functions, the engine's
-- FENCED / HEARTBEAT_FAILED / ERROR rows): counted in the same transaction,
-- once per statement (a row trigger would update one counter row once per
-- row, and many updates of one row in one transaction cost quadratic time).
-- A bypass is a force-unlock after which the next taking of the same lock
-- succeeded; only takings and force-unlocks are ordered.
CREATE FUNCTION batch_lock_audit_counted() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_lock_audit_counted_tg AFTER INSERT ON batch_lock_audit
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_lock_audit_counted();

-- ---- item counts --------------------------------------------------------------

-- Steps that have not ended: what a reader adds to the counters (few rows,
-- however old the repository). end_time is not changed by a checkpoint, so
-- its updates stay HOT.
CREATE INDEX batch_step_execution_open_ix ON batch_step_execution (job_execution_id)
    WHERE end_time IS NULL;

-- A step's counts, counted once it has ended; a manager step's counts are
-- the sums of its partitions' (which count themselves), so it counts nothing.
CREATE FUNCTION batch_step_counted(p_step_execution_id bigint, p_manager boolean)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT NOT coalesce(p_manager, false) AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
        WHERE w.manager_step_execution_id = p_step_execution_id)
$$;

CREATE FUNCTION batch_step_counts_add(p_job_execution_id bigint, p_sign int,
    p_read numeric, p_write numeric, p_skip numeric, p_filter numeric, p_commit numeric,
    p_rollback numeric, p_duplicate numeric)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    IF p_read = 0 AND p_write = 0 AND p_skip = 0 AND p_filter = 0 AND p_commit = 0
       AND p_rollback = 0 AND p_duplicate = 0 THEN
        RETURN;
    END IF;
    SELECT i.job_name INTO v_job FROM batch_job_execution e
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE e.job_execution_id = p_job_execution_id;
    PERFORM batch_step_counts_job(v_job, p_sign, p_read, p_write, p_skip, p_filter, p_commit,
                                  p_rollback, p_duplicate);
END
$$;

CREATE FUNCTION batch_step_counts_job(v_job varchar, p_sign int,
    p_read numeric, p_write numeric, p_skip numeric, p_filter numeric, p_commit numeric,
    p_rollback numeric, p_duplicate numeric)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    PERFORM batch_metric_add('items_read_count', v_job, p_sign * p_read);
    PERFORM batch_metric_add('items_written_count', v_job, p_sign * p_write);
    PERFORM batch_metric_add('items_skipped_count', v_job, p_sign * p_skip);
    PERFORM batch_metric_add('items_filtered_count', v_job, p_sign * p_filter);
    PERFORM batch_metric_add('chunk_commit_count', v_job, p_sign * p_commit);
    PERFORM batch_metric_add('chunk_rollback_count', v_job, p_sign * p_rollback);
    PERFORM batch_metric_add('duplicate_target_write_count', v_job, p_sign * p_duplicate);
END
$$;

-- A step that ends adds its counts; a step whose counts change after it ended
-- (a manager's sums) or that is handed back (a partition: end_time NULL
-- again, counted again when it ends) adds the difference.
CREATE FUNCTION batch_step_counted_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    o int := (OLD.end_time IS NOT NULL AND batch_step_counted(OLD.step_execution_id, false))::int;
    n int := (NEW.end_time IS NOT NULL AND batch_step_counted(NEW.step_execution_id, false))::int;
BEGIN
    PERFORM batch_step_counts_add(NEW.job_execution_id, 1,
        n * NEW.read_count - o * OLD.read_count, n * NEW.write_count - o * OLD.write_count,
        n * (NEW.read_skip_count + NEW.process_skip_count + NEW.write_skip_count)
          - o * (OLD.read_skip_count + OLD.process_skip_count + OLD.write_skip_count),
        n * NEW.filter_count - o * OLD.filter_count, n * NEW.commit_count - o * OLD.commit_count,
        n * NEW.rollback_count - o * OLD.rollback_count,
        n * NEW.duplicate_target_write_count - o * OLD.duplicate_target_write_count);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_step_counted_upd_tg AFTER UPDATE ON batch_step_execution
    FOR EACH ROW WHEN (OLD.end_time IS NOT NULL OR NEW.end_time IS NOT NULL)
    EXECUTE FUNCTION batch_step_counted_tg();

-- Steps written already ended count at once (per statement: see the audit
-- trigger). A manager step that had ended, and counted as a step of its
-- own, before its first partitions were written (not what the engine does,
-- which writes them together, but possible by hand): from then on only the
-- partitions count, so the manager's counts come back out.
CREATE FUNCTION batch_step_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    m record;
BEGIN
    -- (by job name: one update of each counter row per statement)
    FOR m IN SELECT i.job_name, sum(n.read_count) AS rd, sum(n.write_count) AS wr,
                    sum(n.read_skip_count + n.process_skip_count + n.write_skip_count) AS sk,
                    sum(n.filter_count) AS fi, sum(n.commit_count) AS cm,
                    sum(n.rollback_count) AS rb, sum(n.duplicate_target_write_count) AS du
               FROM new_rows n JOIN batch_job_execution e USING (job_execution_id)
               JOIN batch_job_instance i USING (job_instance_id)
              WHERE n.end_time IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
                                 WHERE w.manager_step_execution_id = n.step_execution_id)
              GROUP BY i.job_name LOOP
        PERFORM batch_step_counts_job(m.job_name, 1, m.rd, m.wr, m.sk, m.fi, m.cm, m.rb, m.du);
    END LOOP;
    -- (NOT EXISTS, not NOT IN: an anti join, however many rows the statement wrote)
    FOR m IN SELECT s.* FROM (SELECT DISTINCT n.manager_step_execution_id AS id FROM new_rows n
                               WHERE n.manager_step_execution_id IS NOT NULL) g
               JOIN batch_step_execution s ON s.step_execution_id = g.id
              WHERE s.end_time IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM new_rows n
                                 WHERE n.step_execution_id = s.step_execution_id)
                AND NOT EXISTS (SELECT 1 FROM batch_step_execution w
                                 WHERE w.manager_step_execution_id = s.step_execution_id
                                   AND NOT EXISTS (SELECT 1 FROM new_rows n
                                                    WHERE n.step_execution_id
                                                          = w.step_execution_id)) LOOP
        PERFORM batch_step_counts_add(m.job_execution_id, -1, m.read_count, m.write_count,
            m.read_skip_count + m.process_skip_count + m.write_skip_count, m.filter_count,
            m.commit_count, m.rollback_count, m.duplicate_target_write_count);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_step_inserted_tg AFTER INSERT ON batch_step_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_step_inserted();

-- Steps removed before they ended (a dead run's, by cleanup): their counts,
-- which readers added while the step was open, move into the counters.
CREATE FUNCTION batch_step_deleted_tg() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.job_name, sum(o.read_count) AS rd, sum(o.write_count) AS wr,
                    sum(o.read_skip_count + o.process_skip_count + o.write_skip_count) AS sk,
                    sum(o.filter_count) AS fi, sum(o.commit_count) AS cm,
                    sum(o.rollback_count) AS rb, sum(o.duplicate_target_write_count) AS du
               FROM old_rows o JOIN batch_job_execution e USING (job_execution_id)
               JOIN batch_job_instance i USING (job_instance_id)
              WHERE o.end_time IS NULL
                AND NOT EXISTS (SELECT 1 FROM old_rows w
                                 WHERE w.manager_step_execution_id = o.step_execution_id)
              GROUP BY i.job_name LOOP
        PERFORM batch_step_counts_job(r.job_name, 1, r.rd, r.wr, r.sk, r.fi, r.cm, r.rb, r.du);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_step_deleted_tg AFTER DELETE ON batch_step_execution
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_step_deleted_tg();

-- ---- executions: status counts and high-water marks ----------------------------

-- A job's executions newest first whatever their instance, and a rare
-- (job, status) pair or status found without walking the whole history.
CREATE INDEX batch_job_instance_name_ix ON batch_job_instance (job_name, job_instance_id);
CREATE INDEX batch_job_execution_status_ix ON batch_job_execution (status, job_execution_id);

-- New executions: their job's newest id and status counts (per statement).
CREATE FUNCTION batch_job_execution_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    INSERT INTO batch_job_summary AS s (job_name, last_execution_id)
    SELECT i.job_name, max(n.job_execution_id) FROM new_rows n
      JOIN batch_job_instance i USING (job_instance_id) GROUP BY i.job_name
    ON CONFLICT (job_name) DO UPDATE
       SET last_execution_id = greatest(s.last_execution_id, excluded.last_execution_id);
    FOR r IN SELECT i.job_name, n.status, count(*) AS n FROM new_rows n
               JOIN batch_job_instance i USING (job_instance_id)
              GROUP BY i.job_name, n.status LOOP
        PERFORM batch_status_add('job', r.job_name, r.status, r.n);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_job_execution_ins_tg AFTER INSERT ON batch_job_execution
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_execution_inserted();

-- A status change (a few per execution; a row trigger, so that the chunk
-- checkpoint's update of the execution, which changes no status, runs none).
CREATE FUNCTION batch_job_execution_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_job varchar;
BEGIN
    SELECT i.job_name INTO v_job FROM batch_job_instance i
     WHERE i.job_instance_id = NEW.job_instance_id;
    PERFORM batch_status_add('job', v_job, OLD.status, -1);
    PERFORM batch_status_add('job', v_job, NEW.status, 1);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_job_execution_upd_tg AFTER UPDATE OF status ON batch_job_execution
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION batch_job_execution_status_changed();

-- Removed executions leave the status counts (their instance must still
-- exist when the statement ends: cleanup removes instances in a later
-- statement of the same transaction).
CREATE FUNCTION batch_job_execution_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT i.job_name, o.status, count(*) AS n FROM old_rows o
               JOIN batch_job_instance i USING (job_instance_id)
              GROUP BY i.job_name, o.status LOOP
        PERFORM batch_status_add('job', r.job_name, r.status, -r.n);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_job_execution_del_tg AFTER DELETE ON batch_job_execution
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_job_execution_deleted();

-- The largest run.id a job was ever given: `run --next` counts on from it.
CREATE FUNCTION batch_run_id_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO batch_job_summary AS s (job_name, max_run_id)
    SELECT i.job_name, max(n.parameter_value::bigint) FROM new_rows n
      JOIN batch_job_execution e USING (job_execution_id)
      JOIN batch_job_instance i USING (job_instance_id)
     WHERE n.parameter_name = 'run.id' AND n.parameter_type = 'long' AND n.identifying
       AND n.parameter_value ~ '^[-+]?[0-9]{1,18}$'
     GROUP BY i.job_name
    ON CONFLICT (job_name) DO UPDATE
       SET max_run_id = greatest(s.max_run_id, excluded.max_run_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_run_id_recorded_tg AFTER INSERT ON batch_job_execution_params
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_run_id_recorded();

-- ---- schedule firings ------------------------------------------------------------

-- What a firing counts for in the schedule counters of metrics.
CREATE FUNCTION batch_firing_counts(p_status varchar, p_kind varchar, p_missed bigint,
    OUT fired int, OUT missed bigint, OUT nolaunch int, OUT orphaned int,
    OUT overlapped int)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_status IN ('LAUNCHED', 'FINISHED', 'ORPHANED'))::int,
           CASE WHEN p_kind <> 'SCHEDULED' AND p_missed > 0 THEN p_missed ELSE 0 END,
           (p_status = 'FAILED_TO_LAUNCH')::int, (p_status = 'ORPHANED')::int,
           (p_status = 'SKIPPED_OVERLAP')::int
$$;

CREATE FUNCTION batch_firing_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT n.schedule_id::text AS sched, n.status, count(*) AS n FROM new_rows n
              GROUP BY n.schedule_id, n.status LOOP
        PERFORM batch_status_add('schedule', r.sched, r.status, r.n);
    END LOOP;
    FOR r IN SELECT n.schedule_id::text AS sched, sum(c.fired) AS fired, sum(c.missed) AS missed,
                    sum(c.nolaunch) AS nolaunch, sum(c.orphaned) AS orphaned,
                    sum(c.overlapped) AS overlapped
               FROM new_rows n
              CROSS JOIN LATERAL batch_firing_counts(n.status, n.kind, n.missed_count) c
              GROUP BY n.schedule_id LOOP
        PERFORM batch_metric_add('schedule_fired_count', r.sched, r.fired);
        PERFORM batch_metric_add('schedule_missed_count', r.sched, r.missed);
        PERFORM batch_metric_add('schedule_failed_to_launch_count', r.sched, r.nolaunch);
        PERFORM batch_metric_add('schedule_orphaned_count', r.sched, r.orphaned);
        PERFORM batch_metric_add('schedule_skipped_overlap_count', r.sched, r.overlapped);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_firing_ins_tg AFTER INSERT ON batch_schedule_firing
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_firing_inserted();

-- A firing's outcome recorded: the difference it makes.
CREATE FUNCTION batch_firing_counted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n record;
    o record;
    v_sched varchar := NEW.schedule_id::text;
BEGIN
    n := batch_firing_counts(NEW.status, NEW.kind, NEW.missed_count);
    o := batch_firing_counts(OLD.status, OLD.kind, OLD.missed_count);
    PERFORM batch_status_add('schedule', v_sched, OLD.status, -1);
    PERFORM batch_status_add('schedule', v_sched, NEW.status, 1);
    PERFORM batch_metric_add('schedule_fired_count', v_sched, n.fired - o.fired);
    PERFORM batch_metric_add('schedule_missed_count', v_sched, n.missed - o.missed);
    PERFORM batch_metric_add('schedule_failed_to_launch_count', v_sched, n.nolaunch - o.nolaunch);
    PERFORM batch_metric_add('schedule_orphaned_count', v_sched, n.orphaned - o.orphaned);
    PERFORM batch_metric_add('schedule_skipped_overlap_count', v_sched,
                             n.overlapped - o.overlapped);
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_firing_upd_tg AFTER UPDATE ON batch_schedule_firing
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.kind IS DISTINCT FROM NEW.kind
                       OR OLD.missed_count IS DISTINCT FROM NEW.missed_count)
    EXECUTE FUNCTION batch_firing_counted();

CREATE FUNCTION batch_firing_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT o.schedule_id, o.status, count(*) AS n FROM old_rows o
              GROUP BY o.schedule_id, o.status LOOP
        PERFORM batch_status_add('schedule', r.schedule_id::text, r.status, -r.n);
    END LOOP;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_firing_del_tg AFTER DELETE ON batch_schedule_firing
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION batch_firing_deleted();

-- A removed schedule's rows go with it (its counters are read through it).
CREATE FUNCTION batch_schedule_forgotten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM batch_metric_counter c USING old_rows o
     WHERE c.metric LIKE 'schedule%' AND c.subject = o.schedule_id::text;
    DELETE FROM batch_status_count c USING old_rows o
     WHERE c.kind = 'schedule' AND c.subject = o.schedule_id::text;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_schedule_forgotten_tg AFTER DELETE ON batch_schedule
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION batch_schedule_forgotten();

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
