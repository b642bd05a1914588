-- cbatch job repository: a stalled scheduler node runs nothing the policy
-- forbids, and a child that died leaves no execution looking alive.
--
-- Lateness is judged at claim time, by the database's clock, under the
-- schedule's row lock: a node that read the clock, then stalled (a stop, a
-- swap, a wait on another node's claim) before claiming, no longer decides
-- from its stale reading. A late SCHEDULED instant becomes a one-instant
-- misfire: under SKIP it is recorded MISFIRED and nothing is launched; under
-- RUN_ONCE it is run once, recorded as a misfire run.
--
-- A launch confirms its claim (batch_schedule_launch) before the child execs:
-- the firing must still be this node's and CLAIMED, so that a node stalled
-- between its claim and its launch never runs a firing the others already
-- reported ORPHANED.
--
-- A child that has exited while its execution still claims to run (its
-- process is provably gone: it was the node's own child) has its execution
-- buried (batch_schedule_bury) so that the firing's outcome is the real one.

-- The claim returns two more columns: the kind recorded (a SCHEDULED
-- instant found late becomes MISFIRE_SKIP or MISFIRE_RUN) and the database's
-- clock when it was judged. A changed result type needs DROP, not REPLACE.
DROP FUNCTION batch_schedule_claim(bigint, bigint, timestamptz, varchar, timestamptz, bigint,
    timestamptz, timestamptz, varchar, varchar, jsonb);

-- Claim fire instant p_fire_time of a schedule for node p_node, in one
-- transaction under the schedule's row lock. The caller computed the kind,
-- the parameters and the next instant (p_next_fire_time) from the instant
-- itself and the clock it last read; a SCHEDULED instant is judged again
-- here, by clock_timestamp() read once the row lock is held: later than the
-- schedule's grace (and the node's second of slack), it is recorded as a misfire of that one instant
-- (MISFIRE_SKIP under policy SKIP, with no job key and no parameters, since
-- nothing runs; MISFIRE_RUN under RUN_ONCE). Outcomes:
--   CLAIMED          the firing row is ours, of kind claimed_kind: launch it
--                    unless that is MISFIRE_SKIP (recorded as missed)
--   SKIPPED_CLAIMED  another node has it (claimed_by); recorded as such
--   CHANGED          the schedule was paused or edited since the caller read
--                    it (version): read it again
--   GONE             the schedule was removed
-- next_fire_time is the schedule's shared cursor after the call; db_now the
-- database's clock at the judgement.
CREATE FUNCTION batch_schedule_claim(p_schedule_id bigint, p_version bigint,
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
BEGIN
    -- NO KEY UPDATE: claims queue on each other, but not the foreign-key
    -- checks of other nodes' event and firing writes (KEY SHARE). A plain
    -- FOR UPDATE deadlocked with a node recording its launch: that UPDATE of
    -- the firing row made this insert wait for it, and its event's key check
    -- waited for this lock.
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = p_schedule_id
       FOR NO KEY UPDATE;
    -- After the lock: a wait on another node's claim counts as lateness.
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
    -- A node reckons in whole seconds of the clock it read (late: the instant
    -- plus the grace is before that second); the claim allows one second
    -- more, so that a claim merely crossing into the next second agrees
    -- with the node, and only a real stall is judged here.
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
    claimed_kind := kind;
    INSERT INTO batch_schedule_firing AS f (schedule_id, fire_time, kind, missed_until,
        missed_count, param_time, node_id, status, job_name, job_key, parameters)
    VALUES (p_schedule_id, p_fire_time, kind, missed_until, missed_count,
        p_param_time, p_node, CASE WHEN kind = 'MISFIRE_SKIP' THEN 'MISFIRED' ELSE 'CLAIMED' END,
        s.job_name, job_key, parameters)
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
    outcome := 'CLAIMED';
END $$;

-- The compare-and-set before a launch: firing p_firing_id becomes LAUNCHED
-- with child p_pid (which waits for the answer before it execs) only if it
-- is still node p_node's and still CLAIMED. Otherwise nothing is changed but
-- an event saying why nothing was launched; the answer is false and
-- firing_state says what the firing is now (its status, and who has it or reported it).
CREATE FUNCTION batch_schedule_launch(p_firing_id bigint, p_node varchar, p_pid int,
    p_message varchar, OUT launched boolean, OUT firing_state varchar)
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
    reporter varchar;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = 'LAUNCHED', pid = p_pid, message = coalesce(p_message, '')
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
    RETURNING * INTO f;
    launched := FOUND;
    IF launched THEN
        firing_state := 'LAUNCHED';
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FIRED', f.firing_id, coalesce(p_message, ''));
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

-- The child of firing p_firing_id (of node p_node) has exited while its
-- execution p_job_execution_id still claims to run, owned by p_owner_id: a
-- process the node has reaped, so provably dead. The caller holds the
-- execution's lock (a dead-owner takeover), so no restart runs meanwhile.
-- Its running steps and the execution end FAILED at their last sign of
-- life, with p_message; only if the owner is still p_owner_id and the
-- execution still runs. Returns whether it buried it.
CREATE FUNCTION batch_schedule_bury(p_firing_id bigint, p_node varchar,
    p_job_execution_id bigint, p_owner_id varchar, p_message varchar) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    last_sign timestamptz;
BEGIN
    PERFORM 1 FROM batch_schedule_firing f
     WHERE f.firing_id = p_firing_id AND f.node_id = p_node;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    -- Its last sign of life, as every other burial reckons it.
    SELECT least(clock_timestamp(), greatest(e.heartbeat_time, e.last_updated))
      INTO last_sign
      FROM batch_job_execution e
     WHERE e.job_execution_id = p_job_execution_id AND e.owner_id = p_owner_id
       AND e.status IN ('STARTING', 'STARTED', 'STOPPING')
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE batch_step_execution s
       SET status = 'FAILED', exit_code = 'FAILED', exit_message = left(p_message, 2500),
           end_time = greatest(s.start_time, s.last_updated, last_sign),
           last_updated = clock_timestamp(), version = s.version + 1
     WHERE s.job_execution_id = p_job_execution_id
       AND s.status IN ('STARTING', 'STARTED', 'STOPPING');
    UPDATE batch_job_execution e
       SET status = 'FAILED', exit_code = 'FAILED', exit_message = left(p_message, 2500),
           end_time = last_sign, last_updated = clock_timestamp(), version = e.version + 1
     WHERE e.job_execution_id = p_job_execution_id;
    RETURN true;
END $$;

-- The launch of a claimed firing failed: FAILED_TO_LAUNCH with the reason.
-- Also from LAUNCHED when p_pid is NULL: the claim was confirmed
-- (batch_schedule_launch) but the exec then failed, so nothing ran.
-- With a pid, as before: CLAIMED -> LAUNCHED.
CREATE OR REPLACE FUNCTION batch_schedule_launched(p_firing_id bigint, p_node varchar,
    p_pid int, p_message varchar) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'LAUNCHED' END,
           pid = coalesce(p_pid, x.pid), message = coalesce(p_message, ''),
           finished_at = CASE WHEN p_pid IS NULL THEN clock_timestamp() END
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node
       AND (x.status = 'CLAIMED' OR (p_pid IS NULL AND x.status = 'LAUNCHED'))
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node,
                CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'FIRED' END, f.firing_id,
                coalesce(p_message, ''));
    END IF;
END $$;
