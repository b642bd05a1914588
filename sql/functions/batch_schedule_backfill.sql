-- Backfill schedule p_schedule_id (at version p_version) for p_actor
-- ("cli@HOST", "console@ADDRESS"), under its row lock: one QUEUED firing of
-- kind BACKFILL per instant of p_instants, a JSON array, oldest first, of
-- {"epoch", "job_key", "parameters"} that the caller computed from the
-- schedule's cron, zone and templates (sql/020). An instant that has a
-- firing already (run, skipped, queued, backfilled) keeps it and is answered
-- EXISTS with that firing; a created one is CREATED, recorded as a BACKFILL
-- event. p_parallel: how many of the backfill's firings may run at once
-- (overlap ALLOW only; the others run one at a time). One row per instant,
-- or a single row CHANGED (paused, or changed since it was read) or GONE, and
-- nothing written.
CREATE OR REPLACE FUNCTION batch_schedule_backfill(p_schedule_id bigint, p_version bigint,
    p_actor varchar, p_parallel int, p_instants jsonb)
RETURNS TABLE (outcome varchar, fire_epoch bigint, firing_id bigint, status varchar,
               kind varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    s batch_schedule%ROWTYPE;
    i jsonb;
    t timestamptz;
    k int := 0;
    total int := jsonb_array_length(p_instants);
    note varchar;
    fid bigint;
BEGIN
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = p_schedule_id
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        outcome := 'GONE';
        RETURN NEXT;
        RETURN;
    END IF;
    IF s.version <> p_version OR s.paused THEN
        outcome := 'CHANGED';
        RETURN NEXT;
        RETURN;
    END IF;
    FOR i IN SELECT e.value FROM jsonb_array_elements(p_instants) e LOOP
        k := k + 1;
        t := to_timestamp((i->>'epoch')::bigint);
        fire_epoch := (i->>'epoch')::bigint;
        note := 'backfill by ' || p_actor || ', instant ' || k || ' of ' || total || ': '
            || CASE WHEN s.overlap_policy <> 'ALLOW' THEN 'runs alone, oldest first (overlap policy '
                    || s.overlap_policy || ')'
                    ELSE 'at most ' || p_parallel || ' at once, oldest first (overlap policy ALLOW)'
               END || '; waiting for a scheduler node';
        fid := NULL;
        INSERT INTO batch_schedule_firing AS f (schedule_id, fire_time, kind, param_time,
            node_id, status, job_name, job_key, parameters, message, backfill_parallel)
        VALUES (p_schedule_id, t, 'BACKFILL', t, p_actor, 'QUEUED', s.job_name,
            i->>'job_key', coalesce(i->'parameters', '[]'), note, p_parallel)
        ON CONFLICT ON CONSTRAINT batch_schedule_firing_once_uk DO NOTHING
        RETURNING f.firing_id INTO fid;
        IF fid IS NULL THEN
            SELECT 'EXISTS', f.firing_id, f.status, f.kind INTO outcome, firing_id, status, kind
              FROM batch_schedule_firing f
             WHERE f.schedule_id = p_schedule_id AND f.fire_time = t;
        ELSE
            INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome,
                firing_id, message)
            VALUES (p_schedule_id, t, p_actor, 'BACKFILL', fid, note);
            outcome := 'CREATED';
            firing_id := fid;
            status := 'QUEUED';
            kind := 'BACKFILL';
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
