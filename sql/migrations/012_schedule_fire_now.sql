-- cbatch job repository: "fire now" from the console, a manual firing of a
-- schedule recorded as such (kind MANUAL).
--
-- A manual firing is a claim of the database's current instant (truncated
-- to the second) through batch_schedule_claim, under the schedule's row
-- lock, so that the same rules hold as for a scheduled instant: once per
-- (schedule, instant) -- a second "fire now" in the same second, or one on
-- the second a node claimed, is SKIPPED_CLAIMED -- and the overlap policy:
-- under SKIP, a live firing makes it SKIPPED_OVERLAP (recorded, nothing
-- runs); under QUEUE it is queued behind the live one. A claimed manual
-- firing is not launched by the console: it becomes QUEUED at once, and the
-- next scheduler node that has the job takes it (batch_schedule_take_queued)
-- and launches it as it launches every firing (its lease, its child, its
-- recovery). A paused schedule refuses it (CHANGED), as it refuses claims.

ALTER TABLE batch_schedule_firing
    DROP CONSTRAINT batch_schedule_firing_kind_ck,
    ADD CONSTRAINT batch_schedule_firing_kind_ck CHECK (kind IN
        ('SCHEDULED', 'MISFIRE_RUN', 'MISFIRE_SKIP', 'MANUAL'));
