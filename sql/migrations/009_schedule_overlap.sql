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

-- ---- recovery --------------------------------------------------------------
