-- 016: cleanup's schedule history at scale (issue 20).
--
-- Cleanup walks old schedule events and firings in time order, from the
-- oldest up to the cutoff and never past it, each batch going on from where
-- the last one stopped (the walk by id began at the table's start in every
-- batch, and its last batch read the whole table). The rules of what goes
-- are batch_cleanup_schedule_events() and batch_cleanup_schedule_firings()
-- (sql/functions/), which can be tried in psql.
--
-- An event is never updated; a firing's claimed_at changes only with its
-- status (a queued firing taken), which changes an index already (the open
-- firings'): no update that was HOT stops being so.
CREATE INDEX batch_schedule_event_recorded_ix ON batch_schedule_event (recorded_at, event_id);
CREATE INDEX batch_schedule_firing_claimed_ix ON batch_schedule_firing (claimed_at, firing_id);

-- A schedule's newest firing (kept by cleanup, with its events, for
-- `schedule list`): one step down this key, not a walk back through every
-- schedule's firings until one of this schedule turns up (a schedule that
-- stopped firing long ago is far back).
CREATE INDEX batch_schedule_firing_schedule_ix ON batch_schedule_firing (schedule_id, firing_id);
