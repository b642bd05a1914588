-- 020: backfill (issue 28.11). `schedule backfill NAME --from T --to T` (and
-- the console's action) creates, for each past instant of the schedule's cron
-- in its zone within the range, one QUEUED firing of kind BACKFILL with the
-- parameters of that instant (batch_schedule_backfill): an instant that has
-- a firing already (run, skipped, queued, backfilled) keeps it, under the
-- unique key of (schedule, instant). Scheduler nodes take them as they take
-- every queued firing (batch_schedule_take_queued): oldest instant first,
-- the schedule's own queued firings before them, under the overlap policy
-- (SKIP and QUEUE: one at a time, and never beside another firing of the
-- schedule; ALLOW: at most backfill_parallel backfill firings at once), and
-- the recovery policy applies to their executions as to every firing.
--
-- Each created instant is recorded in the history as a BACKFILL event (and
-- counted: schedule_backfill_count). A cancel (`--cancel`) removes the
-- backfill firings still QUEUED, and records a CANCELED event for each
-- instant; their BACKFILL events stay, no longer tied to a firing, so the
-- history and the counter keep what was asked for.
ALTER TABLE batch_schedule_firing
    ADD COLUMN backfill_parallel int,
    DROP CONSTRAINT batch_schedule_firing_kind_ck,
    ADD CONSTRAINT batch_schedule_firing_kind_ck CHECK (kind IN
        ('SCHEDULED', 'MISFIRE_RUN', 'MISFIRE_SKIP', 'MANUAL', 'BACKFILL')),
    ADD CONSTRAINT batch_schedule_firing_parallel_ck CHECK (backfill_parallel BETWEEN 1 AND 100);

ALTER TABLE batch_schedule_event
    DROP CONSTRAINT batch_schedule_event_outcome_ck,
    ADD CONSTRAINT batch_schedule_event_outcome_ck CHECK (outcome IN
        ('FIRED', 'SKIPPED_CLAIMED', 'MISFIRED', 'FAILED_TO_LAUNCH', 'FINISHED', 'ORPHANED',
         'SKIPPED_OVERLAP', 'QUEUED', 'RECOVERY_DUE', 'RESTARTED', 'NOT_RECOVERED',
         'BACKFILL', 'CANCELED'));
