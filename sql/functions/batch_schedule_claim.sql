-- Claim fire instant p_fire_time of a schedule for node p_node, in one
-- transaction under the schedule's row lock. The caller computed the kind,
-- the parameters and the next instant (p_next_fire_time) from the instant
-- itself and the clock it last read; a SCHEDULED instant is judged again
-- here, by batch_now() read once the row lock is held: later than the
-- schedule's grace (and the node's second of slack), it is recorded as a
-- misfire of that one instant (MISFIRE_SKIP under policy SKIP, with no job
-- key and no parameters, since nothing runs; MISFIRE_RUN under RUN_ONCE). A
-- MANUAL instant ("fire now") is never late. Then the overlap policy is
-- judged, under the same row lock. Outcomes:
--   CLAIMED          the firing row is ours, of kind claimed_kind: launch it
--                    unless that is MISFIRE_SKIP (recorded as missed)
--   SKIPPED_CLAIMED  another node has it (claimed_by): its firing, or the run
--                    of skips it lies in (sql/021). Not history: counted
--                    (schedule_claim_lost_count), nothing recorded
--   SKIPPED_OVERLAP  recorded as skipped (claimed_by: why, the live firing):
--                    the instant right after a run of skips of the same live
--                    firing extends that run (its firing and its event: count
--                    and last instant), else a run of one instant starts
--   QUEUED           recorded, launched later by batch_schedule_take_queued
--   CHANGED          the schedule was paused or edited since the caller read
--                    it (version): read it again
--   GONE             the schedule was removed
-- next_fire_time is the schedule's shared cursor after the call; db_now the
-- database's clock at the judgement. Called with named arguments.
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
    live_id bigint;
    prev record;
BEGIN
    -- NO KEY UPDATE: see 004. Every overlap decision (claims, queued
    -- launches, restarts) is taken under this lock.
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = p_schedule_id
       FOR NO KEY UPDATE;
    db_now := batch_now();
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
        SELECT * INTO live FROM batch_schedule_live_firing(p_schedule_id, NULL, p_node);
        live_id := live.firing_id;
        IF live.firing_id IS NOT NULL THEN
            -- A backfill's queued instants (sql/020) are not the one
            -- waiting: the schedule's own instant still queues, before them.
            IF s.overlap_policy = 'QUEUE' AND NOT EXISTS (
                   SELECT 1 FROM batch_schedule_firing q
                    WHERE q.schedule_id = p_schedule_id AND q.status = 'QUEUED'
                      AND q.kind <> 'BACKFILL') THEN
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
    -- The firing before this instant: a run of skips may cover it already
    -- (another node's claim), or this skip may extend it. Under the row
    -- lock, as every claim of the schedule: two nodes never both extend it.
    SELECT f.firing_id, f.node_id, f.status, f.kind, f.last_instant, f.blocked_by,
           f.claimed_at
      INTO prev
      FROM batch_schedule_firing f
     WHERE f.schedule_id = p_schedule_id AND f.fire_time < p_fire_time
     ORDER BY f.fire_time DESC LIMIT 1;
    IF prev.last_instant >= p_fire_time THEN
        claimed_by := prev.node_id;
    ELSIF new_status = 'SKIPPED_OVERLAP' AND kind = 'SCHEDULED'
          AND prev.status = 'SKIPPED_OVERLAP' AND prev.kind = 'SCHEDULED'
          AND prev.blocked_by = live_id
          -- not across a pause: the instants between were never offered
          AND prev.claimed_at >= s.updated_at
          AND NOT EXISTS (SELECT 1 FROM batch_schedule_firing g
                           WHERE g.schedule_id = p_schedule_id AND g.fire_time >= p_fire_time) THEN
        UPDATE batch_schedule_firing f
           SET last_instant = p_fire_time, instant_count = f.instant_count + 1,
               message = overlap_note, finished_at = batch_now()
         WHERE f.firing_id = prev.firing_id AND f.status = 'SKIPPED_OVERLAP'
        RETURNING f.firing_id INTO firing_id;
        IF firing_id IS NOT NULL THEN
            UPDATE batch_schedule_event v
               SET last_instant = p_fire_time, instant_count = v.instant_count + 1,
                   message = overlap_note, recorded_at = batch_now()
             WHERE v.firing_id = prev.firing_id AND v.outcome = 'SKIPPED_OVERLAP';
            IF NOT FOUND THEN
                -- (its event was cleaned up: the run's own words again)
                INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome,
                    firing_id, message, last_instant, instant_count)
                SELECT f.schedule_id, f.fire_time, f.node_id, f.status, f.firing_id,
                       f.message, f.last_instant, f.instant_count
                  FROM batch_schedule_firing f WHERE f.firing_id = prev.firing_id;
            END IF;
            UPDATE batch_schedule x
               SET next_fire_time = greatest(x.next_fire_time, p_next_fire_time),
                   last_fire_time = greatest(x.last_fire_time, p_fire_time)
             WHERE x.schedule_id = p_schedule_id
            RETURNING x.next_fire_time INTO next_fire_time;
            outcome := new_status;
            claimed_by := live.why;
            RETURN;
        END IF;
    END IF;
    IF claimed_by IS NULL THEN
        INSERT INTO batch_schedule_firing AS f (schedule_id, fire_time, kind, missed_until,
            missed_count, param_time, node_id, status, job_name, job_key, parameters, message,
            finished_at, blocked_by)
        VALUES (p_schedule_id, p_fire_time, kind, missed_until, missed_count,
            p_param_time, p_node, new_status, s.job_name, job_key, parameters,
            coalesce(overlap_note, ''),
            CASE WHEN new_status = 'SKIPPED_OVERLAP' THEN batch_now() END,
            CASE WHEN overlap_note IS NOT NULL THEN live_id END)
        ON CONFLICT ON CONSTRAINT batch_schedule_firing_once_uk DO NOTHING
        RETURNING f.firing_id INTO firing_id;
        IF firing_id IS NULL THEN
            SELECT f.node_id INTO claimed_by FROM batch_schedule_firing f
             WHERE f.schedule_id = p_schedule_id AND f.fire_time = p_fire_time;
            claimed_by := coalesce(claimed_by, 'another node');
        END IF;
    END IF;
    IF claimed_by IS NOT NULL THEN
        -- Lost the race for an instant the cluster took once: counted, not
        -- history (sql/021).
        PERFORM batch_metric_add('schedule_claim_lost_count', p_schedule_id::text, 1);
        outcome := 'SKIPPED_CLAIMED';
        RETURN;
    END IF;
    claimed_by := p_node;
    UPDATE batch_schedule x
       SET next_fire_time = greatest(x.next_fire_time, p_next_fire_time),
           last_fire_time = greatest(x.last_fire_time, coalesce(missed_until, p_fire_time))
     WHERE x.schedule_id = p_schedule_id
    RETURNING x.next_fire_time INTO next_fire_time;
    IF kind IN ('MISFIRE_RUN', 'MISFIRE_SKIP') THEN
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
