-- cbatch job repository: a schedule never runs two of its firings at once
-- unless told to, and restarts a firing's execution that its node's death
-- (or a lost connection) ended unfinished.
--
-- Overlap policy (batch_schedule.overlap_policy), decided in the claim under
-- the schedule's row lock, so that two nodes cannot both find the schedule
-- idle:
--   SKIP   (the default, also for every schedule that existed before this
--          migration) a fire instant that comes due while an earlier firing
--          of the schedule is live is recorded SKIPPED_OVERLAP; nothing runs.
--   QUEUE  it is recorded QUEUED (at most one per schedule; more are
--          SKIPPED_OVERLAP) and any node launches it, with the parameters
--          of its own instant, once the live one has ended.
--   ALLOW  as before: every instant runs.
-- A firing is live (batch_schedule_live_firing) while its launch is in
-- progress on a node whose lease holds, while its execution runs under a lock
-- whose lease holds (on any node; an execution whose lease ran out is dead),
-- while it is QUEUED, and while a restart of it is due.
--
-- Recovery (recover_policy RESTART, the default; LEAVE as before): an
-- execution of a firing that ended without finishing is restarted, by the
-- CLI's `restart`, on a node that has the job, recover_delay_seconds after
-- its end was seen and once the execution is dead by its lease, at most
-- recover_attempts times. Ended without finishing means:
--   - the firing's node is gone (ORPHANED) and its execution is STOPPED (the
--     parent-death signal) or still claims to run (judged dead by its lease
--     when the restart is due), or
--   - the node saw its child end: STOPPED because the node itself was
--     stopping, or FAILED as 'owner lost' (the process died without
--     recording its end: killed, or cut off from the repository for its
--     whole lease, which is the only way a lost connection ends a run).
-- A FAILED execution with any other message (a step's error, bad input) and
-- a stop asked for by an operator are never restarted.

-- ---- schedules -------------------------------------------------------------

ALTER TABLE batch_schedule
    ADD COLUMN overlap_policy varchar(5) NOT NULL DEFAULT 'SKIP',
    ADD COLUMN recover_policy varchar(7) NOT NULL DEFAULT 'RESTART',
    ADD COLUMN recover_attempts int NOT NULL DEFAULT 3,
    ADD COLUMN recover_delay_seconds int NOT NULL DEFAULT 10,
    ADD CONSTRAINT batch_schedule_overlap_ck CHECK (overlap_policy IN ('SKIP', 'QUEUE', 'ALLOW')),
    ADD CONSTRAINT batch_schedule_recover_ck CHECK (recover_policy IN ('RESTART', 'LEAVE')),
    ADD CONSTRAINT batch_schedule_recover_attempts_ck CHECK (recover_attempts BETWEEN 0 AND 100),
    ADD CONSTRAINT batch_schedule_recover_delay_ck CHECK (recover_delay_seconds BETWEEN 0 AND 86400);

-- attempt: restarts launched for the firing so far; recover_after: when the
-- next one is due (NULL: none is).
ALTER TABLE batch_schedule_firing
    ADD COLUMN attempt int NOT NULL DEFAULT 0,
    ADD COLUMN recover_after timestamptz,
    DROP CONSTRAINT batch_schedule_firing_status_ck,
    ADD CONSTRAINT batch_schedule_firing_status_ck CHECK (status IN
        ('CLAIMED', 'LAUNCHED', 'FINISHED', 'FAILED_TO_LAUNCH', 'MISFIRED', 'ORPHANED',
         'QUEUED', 'SKIPPED_OVERLAP'));
-- What a claim looks at for overlap: firings that may still be live.
CREATE INDEX batch_schedule_firing_live_ix ON batch_schedule_firing (schedule_id)
    WHERE status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED', 'QUEUED') OR recover_after IS NOT NULL;

ALTER TABLE batch_schedule_event
    ADD COLUMN attempt int,
    DROP CONSTRAINT batch_schedule_event_outcome_ck,
    ADD CONSTRAINT batch_schedule_event_outcome_ck CHECK (outcome IN
        ('FIRED', 'SKIPPED_CLAIMED', 'MISFIRED', 'FAILED_TO_LAUNCH', 'FINISHED', 'ORPHANED',
         'SKIPPED_OVERLAP', 'QUEUED', 'RECOVERY_DUE', 'RESTARTED', 'NOT_RECOVERED'));

-- ---- overlap ---------------------------------------------------------------

-- Whether execution p_exec runs under a lock whose lease holds: the same test
-- as `show`'s owner_lost, the other way round.
CREATE FUNCTION batch_schedule_execution_live(p_exec bigint) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM batch_job_execution e
          JOIN batch_lock l ON l.lock_name = e.lock_name AND l.fencing_token = e.fencing_token
         WHERE e.job_execution_id = p_exec AND e.status IN ('STARTING', 'STARTED', 'STOPPING')
           AND NOT l.released AND l.locked_until >= clock_timestamp())
$$;

-- The earliest live firing of schedule p_schedule_id other than p_except, and
-- why it is live (NULL firing_id: none is).
CREATE FUNCTION batch_schedule_live_firing(p_schedule_id bigint, p_except bigint,
    OUT firing_id bigint, OUT why varchar)
LANGUAGE sql STABLE AS $$
    SELECT f.firing_id,
           'firing ' || f.firing_id || ' (' || f.fire_time || ') '
           || CASE WHEN f.status = 'QUEUED' THEN 'is queued'
                   WHEN f.recover_after IS NOT NULL THEN 'has a restart due at ' || f.recover_after
                   WHEN x.job_execution_id IS NOT NULL
                        AND batch_schedule_execution_live(x.job_execution_id)
                   THEN 'runs execution ' || x.job_execution_id || ' (' || x.status || ')'
                   ELSE 'is being launched by node ' || f.node_id END
      FROM batch_schedule_firing f
      LEFT JOIN batch_scheduler_node n ON n.node_id = f.node_id
      LEFT JOIN LATERAL batch_schedule_firing_execution(f.firing_id) x ON true
     WHERE f.schedule_id = p_schedule_id AND f.firing_id <> coalesce(p_except, 0)
       AND (f.status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED', 'QUEUED')
            OR f.recover_after IS NOT NULL)
       AND (f.status = 'QUEUED' OR f.recover_after IS NOT NULL
            -- a launch in progress (no execution yet) on a node still alive
            OR (f.status IN ('CLAIMED', 'LAUNCHED') AND n.stopped_at IS NULL
                AND n.heartbeat_at >= clock_timestamp() - n.lease_seconds * interval '1 second')
            -- its execution, on any node, under a lease that holds
            OR (x.job_execution_id IS NOT NULL AND batch_schedule_execution_live(x.job_execution_id)))
     ORDER BY f.fire_time
     LIMIT 1
$$;

-- The claim of 008, with the overlap policy judged after the lateness, under
-- the same row lock. New outcomes: SKIPPED_OVERLAP (the instant is recorded
-- as skipped; nothing to launch) and QUEUED (recorded, launched later by
-- batch_schedule_take_queued). claimed_by then names why (the live firing).
CREATE OR REPLACE FUNCTION batch_schedule_claim(p_schedule_id bigint, p_version bigint,
    p_fire_time timestamptz, p_kind varchar, p_missed_until timestamptz, p_missed_count bigint,
    p_param_time timestamptz, p_next_fire_time timestamptz, p_node varchar,
    p_job_key varchar, p_parameters jsonb,
    OUT outcome varchar, OUT firing_id bigint, OUT claimed_by varchar,
    OUT next_fire_time timestamptz, OUT claimed_kind varchar, OUT db_now timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    s batch_schedule%ROWTYPE;
    kind varchar := p_kind;
    missed_until timestamptz := p_missed_until;
    missed_count bigint := coalesce(p_missed_count, 0);
    job_key varchar := p_job_key;
    parameters jsonb := coalesce(p_parameters, '[]');
    late_note text := '';
    new_status varchar;
    live record;
    overlap_note text;
BEGIN
    -- NO KEY UPDATE: see 004. Every overlap decision (claims, queued
    -- launches, restarts) is taken under this lock.
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = p_schedule_id
       FOR NO KEY UPDATE;
    db_now := clock_timestamp();
    IF NOT FOUND THEN
        outcome := 'GONE';
        RETURN;
    END IF;
    next_fire_time := s.next_fire_time;
    IF s.version <> p_version OR s.paused THEN
        outcome := 'CHANGED';
        RETURN;
    END IF;
    IF kind = 'SCHEDULED'
       AND p_fire_time + (s.misfire_grace_seconds + 1) * interval '1 second'
           < date_trunc('second', db_now) THEN
        late_note := ' (claimed ' || round(extract(epoch FROM db_now - p_fire_time), 1)
            || 's after the instant by the database''s clock, past the grace of '
            || s.misfire_grace_seconds || 's)';
        missed_until := p_fire_time;
        missed_count := 1;
        IF s.misfire_policy = 'SKIP' THEN
            kind := 'MISFIRE_SKIP';
            job_key := NULL;
            parameters := '[]';
        ELSE
            kind := 'MISFIRE_RUN';
        END IF;
    END IF;
    new_status := CASE WHEN kind = 'MISFIRE_SKIP' THEN 'MISFIRED' ELSE 'CLAIMED' END;
    IF new_status = 'CLAIMED' AND s.overlap_policy <> 'ALLOW' THEN
        -- A dead node's firing is reported (and its restart planned) before
        -- the schedule is judged idle: between the node's lease running out
        -- and the next look for orphans, its unfinished run would otherwise
        -- look like nothing at all, and a new firing would run first.
        PERFORM 1 FROM batch_schedule_orphans_of(p_node, NULL, p_schedule_id);
        SELECT * INTO live FROM batch_schedule_live_firing(p_schedule_id, NULL);
        IF live.firing_id IS NOT NULL THEN
            IF s.overlap_policy = 'QUEUE' AND NOT EXISTS (
                   SELECT 1 FROM batch_schedule_firing q
                    WHERE q.schedule_id = p_schedule_id AND q.status = 'QUEUED') THEN
                new_status := 'QUEUED';
                overlap_note := 'queued: ' || live.why || '; it runs once that one has ended '
                    || '(overlap policy QUEUE)';
            ELSE
                new_status := 'SKIPPED_OVERLAP';
                overlap_note := 'skipped: ' || live.why
                    || CASE WHEN s.overlap_policy = 'QUEUE'
                            THEN ' and another firing is queued already (overlap policy QUEUE)'
                            ELSE ' (overlap policy SKIP)' END;
                job_key := NULL;
            END IF;
        END IF;
    END IF;
    claimed_kind := kind;
    INSERT INTO batch_schedule_firing AS f (schedule_id, fire_time, kind, missed_until,
        missed_count, param_time, node_id, status, job_name, job_key, parameters, message,
        finished_at)
    VALUES (p_schedule_id, p_fire_time, kind, missed_until, missed_count,
        p_param_time, p_node, new_status, s.job_name, job_key, parameters,
        coalesce(overlap_note, ''),
        CASE WHEN new_status = 'SKIPPED_OVERLAP' THEN clock_timestamp() END)
    ON CONFLICT ON CONSTRAINT batch_schedule_firing_once_uk DO NOTHING
    RETURNING f.firing_id INTO firing_id;
    IF firing_id IS NULL THEN
        SELECT f.node_id INTO claimed_by FROM batch_schedule_firing f
         WHERE f.schedule_id = p_schedule_id AND f.fire_time = p_fire_time;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, message)
        VALUES (p_schedule_id, p_fire_time, p_node, 'SKIPPED_CLAIMED',
                'claimed by ' || coalesce(claimed_by, 'another node'));
        outcome := 'SKIPPED_CLAIMED';
        RETURN;
    END IF;
    claimed_by := p_node;
    UPDATE batch_schedule x
       SET next_fire_time = greatest(x.next_fire_time, p_next_fire_time),
           last_fire_time = greatest(x.last_fire_time, coalesce(missed_until, p_fire_time))
     WHERE x.schedule_id = p_schedule_id
    RETURNING x.next_fire_time INTO next_fire_time;
    IF kind <> 'SCHEDULED' THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (p_schedule_id, p_fire_time, p_node, 'MISFIRED', firing_id,
                CASE WHEN missed_count < 0 THEN '10000 or more firings'
                     WHEN missed_count = 1 THEN '1 firing'
                     ELSE missed_count || ' firings' END
                || ' missed from ' || p_fire_time || ' to ' || missed_until || late_note
                || CASE WHEN kind = 'MISFIRE_RUN' THEN ': running once now, as of ' || p_param_time
                        ELSE ': skipped (misfire policy SKIP)' END);
    END IF;
    IF overlap_note IS NOT NULL THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (p_schedule_id, p_fire_time, p_node, new_status, firing_id, overlap_note);
        outcome := new_status;
        claimed_by := live.why;
        RETURN;
    END IF;
    outcome := 'CLAIMED';
END $$;

-- Queued firings of jobs p_jobs whose schedule has no live firing left: each
-- becomes CLAIMED by node p_node (under the schedule's row lock, as a claim),
-- with its own instant and parameters, to be launched as a claim is. A
-- claimed_at of now, so that its execution is told from earlier ones.
CREATE FUNCTION batch_schedule_take_queued(p_node varchar, p_jobs varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, job_name varchar,
               parameters jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    live record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id FROM batch_schedule_firing f
         WHERE f.status = 'QUEUED' AND f.job_name = ANY (p_jobs)
         ORDER BY f.fire_time
    LOOP
        -- A schedule being claimed is left for the next tick: never a wait.
        PERFORM 1 FROM batch_schedule x WHERE x.schedule_id = r.schedule_id AND NOT x.paused
           FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        PERFORM 1 FROM batch_schedule_orphans_of(p_node, NULL, r.schedule_id);
        SELECT * INTO live FROM batch_schedule_live_firing(r.schedule_id, r.firing_id);
        CONTINUE WHEN live.firing_id IS NOT NULL;
        RETURN QUERY
        UPDATE batch_schedule_firing x
           SET status = 'CLAIMED', node_id = p_node, claimed_at = clock_timestamp(),
               message = ''
         WHERE x.firing_id = r.firing_id AND x.status = 'QUEUED'
        RETURNING x.firing_id, x.schedule_id, x.fire_time, x.job_name, x.parameters;
    END LOOP;
END $$;

-- ---- recovery --------------------------------------------------------------

-- Firing p_firing_id ended (p_cause: 'orphaned' its node is gone, 'finished'
-- its node saw the child end, 'stopping' the same while the node was
-- stopping): if its execution ended without finishing and its schedule
-- restarts, a restart is due after the schedule's delay; past the last
-- attempt, NOT_RECOVERED says so. Recorded as events of node p_node.
CREATE FUNCTION batch_schedule_plan_recovery(p_firing_id bigint, p_node varchar, p_cause varchar)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
    s batch_schedule%ROWTYPE;
    e batch_job_execution%ROWTYPE;
    unfinished text;
BEGIN
    SELECT * INTO f FROM batch_schedule_firing x WHERE x.firing_id = p_firing_id;
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = f.schedule_id;
    IF NOT FOUND OR s.recover_policy <> 'RESTART' OR f.job_execution_id IS NULL THEN
        RETURN;
    END IF;
    SELECT * INTO e FROM batch_job_execution x WHERE x.job_execution_id = f.job_execution_id;
    IF e.status IN ('STARTING', 'STARTED', 'STOPPING') AND p_cause = 'orphaned' THEN
        unfinished := 'was ' || e.status || ' when its node was found gone';
    ELSIF e.status = 'STOPPED' AND p_cause IN ('orphaned', 'stopping')
          AND e.exit_message NOT LIKE '%stopped by operator%' THEN
        unfinished := 'ended STOPPED by '
            || CASE WHEN p_cause = 'orphaned' THEN 'its node''s death (the parent-death signal)'
                    ELSE 'its node''s stop' END;
    ELSIF e.status = 'FAILED' AND e.exit_message LIKE 'owner lost%' THEN
        unfinished := 'ended FAILED, its process gone: ' || left(e.exit_message, 200);
    ELSE
        RETURN;
    END IF;
    IF f.attempt >= s.recover_attempts THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id, e.job_execution_id,
                f.attempt, 'execution ' || e.job_execution_id || ' ' || unfinished
                || '; not restarted: ' || f.attempt || ' of ' || s.recover_attempts
                || ' restart attempts made (restart it by hand)');
        RETURN;
    END IF;
    UPDATE batch_schedule_firing x
       SET recover_after = clock_timestamp() + s.recover_delay_seconds * interval '1 second'
     WHERE x.firing_id = p_firing_id
    RETURNING * INTO f;
    INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                      job_execution_id, attempt, message)
    VALUES (f.schedule_id, f.fire_time, p_node, 'RECOVERY_DUE', f.firing_id, e.job_execution_id,
            f.attempt + 1, 'execution ' || e.job_execution_id || ' ' || unfinished
            || '; restart attempt ' || (f.attempt + 1) || ' of ' || s.recover_attempts
            || ' due at ' || f.recover_after || ', once its lease lets it');
END $$;

-- Firings of jobs p_jobs whose restart is due and whose execution is dead
-- (ended, or its lease ran out) become CLAIMED by node p_node with one more
-- attempt, to be launched as `restart EXECUTION`. Under the schedule's row
-- lock (a claim's) and the firing's, skipping either when locked, so that
-- one node takes each. An execution that has meanwhile completed (a restart
-- by hand) or been abandoned needs none: NOT_RECOVERED says so.
CREATE FUNCTION batch_schedule_take_recovery(p_node varchar, p_jobs varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, job_name varchar,
               job_execution_id bigint, attempt int, attempts int)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    s batch_schedule%ROWTYPE;
    x record;
    live record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id FROM batch_schedule_firing f
         WHERE f.recover_after <= clock_timestamp() AND f.job_name = ANY (p_jobs)
         ORDER BY f.recover_after
    LOOP
        SELECT * INTO s FROM batch_schedule b WHERE b.schedule_id = r.schedule_id AND NOT b.paused
           FOR NO KEY UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        PERFORM 1 FROM batch_schedule_firing f
         WHERE f.firing_id = r.firing_id AND f.recover_after <= clock_timestamp()
           FOR UPDATE SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        SELECT e.job_execution_id, e.status INTO x FROM batch_schedule_firing_execution(r.firing_id) e;
        IF x.job_execution_id IS NULL OR x.status IN ('COMPLETED', 'ABANDONED') THEN
            UPDATE batch_schedule_firing f SET recover_after = NULL WHERE f.firing_id = r.firing_id;
            INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                              job_execution_id, message)
            SELECT f.schedule_id, f.fire_time, p_node, 'NOT_RECOVERED', f.firing_id,
                   x.job_execution_id, 'no restart needed: execution '
                   || coalesce(x.job_execution_id::text, '(none)') || ' is '
                   || coalesce(x.status, 'gone')
              FROM batch_schedule_firing f WHERE f.firing_id = r.firing_id;
            CONTINUE;
        END IF;
        -- Not before it is dead: its lease decides, on any node.
        CONTINUE WHEN batch_schedule_execution_live(x.job_execution_id);
        IF s.overlap_policy <> 'ALLOW' THEN
            SELECT * INTO live FROM batch_schedule_live_firing(r.schedule_id, r.firing_id);
            CONTINUE WHEN live.firing_id IS NOT NULL;
        END IF;
        RETURN QUERY
        UPDATE batch_schedule_firing f
           SET status = 'CLAIMED', node_id = p_node, attempt = f.attempt + 1,
               recover_after = NULL, job_execution_id = x.job_execution_id, pid = NULL,
               exit_code = NULL, exit_status = NULL, finished_at = NULL,
               message = 'restart attempt ' || (f.attempt + 1) || ' of ' || s.recover_attempts
                   || ' of execution ' || x.job_execution_id
         WHERE f.firing_id = r.firing_id
        RETURNING f.firing_id, f.schedule_id, f.fire_time, f.job_name, x.job_execution_id,
                  f.attempt, s.recover_attempts;
    END LOOP;
END $$;

-- The launch's compare-and-set of 008, now also refused when node p_node's
-- own lease has run out: the other nodes no longer count its claim as live
-- (batch_schedule_live_firing), so launching it could overlap what they
-- launched meanwhile. Such a claim ends FAILED_TO_LAUNCH. A restart's launch
-- is recorded RESTARTED with its attempt.
CREATE OR REPLACE FUNCTION batch_schedule_launch(p_firing_id bigint, p_node varchar, p_pid int,
    p_message varchar, OUT launched boolean, OUT firing_state varchar)
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
    reporter varchar;
    attempts int;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = 'LAUNCHED', pid = p_pid, message = coalesce(p_message, '')
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
       AND EXISTS (SELECT 1 FROM batch_scheduler_node n
                    WHERE n.node_id = p_node AND n.stopped_at IS NULL
                      AND n.heartbeat_at >= clock_timestamp() - n.lease_seconds * interval '1 second')
    RETURNING * INTO f;
    launched := FOUND;
    IF launched THEN
        firing_state := 'LAUNCHED';
        SELECT b.recover_attempts INTO attempts FROM batch_schedule b
         WHERE b.schedule_id = f.schedule_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node,
                CASE WHEN f.attempt > 0 THEN 'RESTARTED' ELSE 'FIRED' END, f.firing_id,
                CASE WHEN f.attempt > 0 THEN f.job_execution_id END,
                CASE WHEN f.attempt > 0 THEN f.attempt END,
                CASE WHEN f.attempt > 0 THEN 'restart attempt ' || f.attempt || ' of '
                     || attempts || ' of execution ' || f.job_execution_id || ': ' ELSE '' END
                || coalesce(p_message, ''));
        RETURN;
    END IF;
    UPDATE batch_schedule_firing x
       SET status = 'FAILED_TO_LAUNCH', finished_at = clock_timestamp(),
           message = 'not launched: this node''s lease ran out between its claim and its launch'
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
    RETURNING * INTO f;
    IF FOUND THEN
        firing_state := 'claimed by this node after its lease ran out';
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FAILED_TO_LAUNCH', f.firing_id, f.message);
        RETURN;
    END IF;
    SELECT * INTO f FROM batch_schedule_firing x WHERE x.firing_id = p_firing_id;
    IF NOT FOUND THEN
        firing_state := 'gone (its schedule was removed)';
        RETURN;
    END IF;
    IF f.status = 'ORPHANED' THEN
        SELECT e.node_id INTO reporter FROM batch_schedule_event e
         WHERE e.firing_id = p_firing_id AND e.outcome = 'ORPHANED'
         ORDER BY e.event_id DESC LIMIT 1;
    END IF;
    firing_state := f.status
        || CASE WHEN f.node_id <> p_node THEN ', claimed by node ' || f.node_id ELSE '' END
        || CASE WHEN reporter IS NOT NULL THEN ' by node ' || reporter ELSE '' END;
    INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
    VALUES (f.schedule_id, f.fire_time, p_node, 'FAILED_TO_LAUNCH', f.firing_id,
            'not launched: the firing is ' || firing_state || ', no longer this node''s claim '
            || '(the node stalled between its claim and its launch)');
END $$;

-- The end of a firing's child, as in 004, with p_stopping (the node was
-- stopping, and asked its children to stop): then the recovery is planned.
DROP FUNCTION batch_schedule_finished(bigint, varchar, int, varchar);
CREATE FUNCTION batch_schedule_finished(p_firing_id bigint, p_node varchar, p_exit_code int,
    p_message varchar, p_stopping boolean,
    OUT job_execution_id bigint, OUT exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    SELECT x.job_execution_id, x.status INTO job_execution_id, exit_status
      FROM batch_schedule_firing_execution(p_firing_id) x;
    UPDATE batch_schedule_firing x
       SET status = 'FINISHED', exit_code = p_exit_code, job_execution_id = job_execution_id,
           exit_status = exit_status, message = coalesce(p_message, ''),
           finished_at = clock_timestamp()
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node
       AND x.status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED')
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, attempt, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FINISHED', f.firing_id, job_execution_id,
                nullif(f.attempt, 0), coalesce(p_message, ''));
        -- An ORPHANED firing's restart may be due already: planned once.
        IF f.recover_after IS NULL THEN
            PERFORM batch_schedule_plan_recovery(p_firing_id, p_node,
                CASE WHEN p_stopping THEN 'stopping' ELSE 'finished' END);
        END IF;
    END IF;
END $$;

-- Orphans as in 004, each with its recovery planned; only those of schedule
-- p_schedule_id unless it is NULL.
CREATE FUNCTION batch_schedule_orphans_of(p_node varchar, p_dead_nodes varchar[],
    p_schedule_id bigint)
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, node_id varchar,
               job_execution_id bigint, exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    e record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id, f.fire_time, f.node_id
          FROM batch_schedule_firing f
          LEFT JOIN batch_scheduler_node n ON n.node_id = f.node_id
         WHERE f.status IN ('CLAIMED', 'LAUNCHED') AND f.node_id <> p_node
           AND (p_schedule_id IS NULL OR f.schedule_id = p_schedule_id)
           AND (n.node_id IS NULL OR n.stopped_at IS NOT NULL
                OR n.heartbeat_at < clock_timestamp() - n.lease_seconds * interval '1 second'
                OR f.node_id = ANY (coalesce(p_dead_nodes, '{}')))
         ORDER BY f.firing_id
         FOR UPDATE OF f SKIP LOCKED
    LOOP
        SELECT x.job_execution_id, x.status INTO e FROM batch_schedule_firing_execution(r.firing_id) x;
        UPDATE batch_schedule_firing x
           SET status = 'ORPHANED', job_execution_id = e.job_execution_id, exit_status = e.status,
               finished_at = clock_timestamp(),
               message = 'node ' || r.node_id || ' is gone; '
                   || CASE WHEN e.job_execution_id IS NULL THEN 'it started no execution'
                           ELSE 'execution ' || e.job_execution_id || ' was ' || e.status END
         WHERE x.firing_id = r.firing_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, message)
        SELECT x.schedule_id, x.fire_time, p_node, 'ORPHANED', x.firing_id, x.job_execution_id,
               x.message
          FROM batch_schedule_firing x WHERE x.firing_id = r.firing_id;
        PERFORM batch_schedule_plan_recovery(r.firing_id, p_node, 'orphaned');
        firing_id := r.firing_id;
        schedule_id := r.schedule_id;
        fire_time := r.fire_time;
        node_id := r.node_id;
        job_execution_id := e.job_execution_id;
        exit_status := e.status;
        RETURN NEXT;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION batch_schedule_orphans(p_node varchar, p_dead_nodes varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, node_id varchar,
               job_execution_id bigint, exit_status varchar)
LANGUAGE sql AS $$
    SELECT * FROM batch_schedule_orphans_of(p_node, p_dead_nodes, NULL)
$$;
