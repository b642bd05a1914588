-- Fire schedule p_schedule_id (at version p_version) now, for p_actor
-- ("console@ADDRESS"): the claim of the current second with the parameters
-- the caller filled for it (p_fire_epoch, read from this database's clock).
-- outcome: QUEUED (waiting for a scheduler node, or behind a live firing
-- under QUEUE), SKIPPED_OVERLAP and SKIPPED_CLAIMED (why: the live firing, or
-- who claimed the instant), CHANGED (paused, or changed since it was read),
-- GONE.
-- The reason given is the one that decides. A node may have judged this
-- second already: when it skipped it for overlap, the answer is that skip
-- (SKIPPED_OVERLAP, in the node's words: which firing still runs which
-- execution), not "taken"; SKIPPED_CLAIMED names a firing that really took
-- the instant (its id, node and status).
CREATE OR REPLACE FUNCTION batch_schedule_fire_now(p_schedule_id bigint, p_version bigint,
    p_fire_epoch bigint, p_actor varchar, p_job_key varchar, p_parameters jsonb,
    OUT outcome varchar, OUT firing_id bigint, OUT why varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    c record;
    e record;
    t timestamptz := to_timestamp(p_fire_epoch);
BEGIN
    SELECT * INTO c FROM batch_schedule_claim(p_schedule_id, p_version, t, 'MANUAL', NULL, 0,
        t, NULL, p_actor, p_job_key, p_parameters);
    outcome := c.outcome;
    firing_id := c.firing_id;
    why := c.claimed_by;
    IF c.outcome = 'CLAIMED' THEN
        UPDATE batch_schedule_firing x
           SET status = 'QUEUED',
               message = 'fired now by ' || p_actor || ': waiting for a scheduler node'
         WHERE x.firing_id = c.firing_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (p_schedule_id, t, p_actor, 'QUEUED', c.firing_id,
                'fired now by ' || p_actor || ': waiting for a scheduler node');
        outcome := 'QUEUED';
        why := NULL;
    ELSIF c.outcome = 'SKIPPED_CLAIMED' THEN
        -- the instant's firing, or the run of skips it lies in (sql/021)
        SELECT f.firing_id, f.status, f.node_id, f.message INTO e
          FROM batch_schedule_firing f
         WHERE f.schedule_id = p_schedule_id AND f.fire_time <= t
           AND coalesce(f.last_instant, f.fire_time) >= t
         ORDER BY f.fire_time DESC LIMIT 1;
        IF e.status = 'SKIPPED_OVERLAP' THEN
            outcome := 'SKIPPED_OVERLAP';
            why := e.message;
        ELSIF e.firing_id IS NOT NULL THEN
            why := 'firing ' || e.firing_id || ' of ' || coalesce(e.node_id, 'another node')
                   || ' (' || e.status || ')';
        END IF;
    ELSIF c.outcome = 'SKIPPED_OVERLAP' THEN
        -- The skip's own words: the live firing and the policy.
        SELECT x.message INTO why FROM batch_schedule_firing x WHERE x.firing_id = c.firing_id;
    ELSIF c.outcome = 'QUEUED' THEN
        UPDATE batch_schedule_firing x
           SET message = 'fired now by ' || p_actor || '; ' || x.message
         WHERE x.firing_id = c.firing_id;
    END IF;
END $$;
