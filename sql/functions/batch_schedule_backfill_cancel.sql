-- Cancel the backfill of schedule p_schedule_id for p_actor: its BACKFILL
-- firings still QUEUED go (those taken run on), each instant recorded as a
-- CANCELED event; their BACKFILL events stay in the history, no longer tied
-- to a firing (sql/020). A backfill of the same range later creates them
-- again. Under the schedule's row lock, so that no node takes one meanwhile.
-- The instants canceled, oldest first.
CREATE OR REPLACE FUNCTION batch_schedule_backfill_cancel(p_schedule_id bigint, p_actor varchar)
RETURNS TABLE (fire_time timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM batch_schedule x WHERE x.schedule_id = p_schedule_id FOR NO KEY UPDATE;
    UPDATE batch_schedule_event e SET firing_id = NULL
      FROM batch_schedule_firing f
     WHERE e.firing_id = f.firing_id AND f.schedule_id = p_schedule_id
       AND f.kind = 'BACKFILL' AND f.status = 'QUEUED';
    RETURN QUERY
    WITH gone AS (
        DELETE FROM batch_schedule_firing f
         WHERE f.schedule_id = p_schedule_id AND f.kind = 'BACKFILL' AND f.status = 'QUEUED'
        RETURNING f.fire_time),
    noted AS (
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, message)
        SELECT p_schedule_id, g.fire_time, p_actor, 'CANCELED',
               'backfill canceled by ' || p_actor || ': not run'
          FROM gone g
        RETURNING 1)
    SELECT g.fire_time FROM gone g ORDER BY g.fire_time;
END $$;
