-- 021: the schedule history is what happened, not every node's every look
-- (issue 28.5: 273 SKIPPED_CLAIMED and 151 SKIPPED_OVERLAP rows against 122
-- fired).
--
-- A node that lost the claim race for an instant another node took records
-- nothing: the claim counts it (schedule_claim_lost_count, metric
-- cbatch_schedule_claim_lost_total) and answers SKIPPED_CLAIMED as before.
-- The rows recorded so far go: the counter was seeded from them (019) and
-- counters never take back.
--
-- Consecutive instants skipped because the same firing was live are one run:
-- one SKIPPED_OVERLAP firing and one event, from fire_time to last_instant,
-- instant_count instants, extended by each claim under the schedule's row
-- lock (batch_schedule_claim). blocked_by is the live firing the skip (or a
-- queued firing) waited for. A firing or event of one instant has
-- instant_count 1 and last_instant NULL.
ALTER TABLE batch_schedule_firing
    ADD COLUMN last_instant timestamptz,
    ADD COLUMN instant_count bigint NOT NULL DEFAULT 1,
    ADD COLUMN blocked_by bigint,
    ADD CONSTRAINT batch_schedule_firing_instants_ck CHECK (instant_count >= 1);

ALTER TABLE batch_schedule_event
    ADD COLUMN last_instant timestamptz,
    ADD COLUMN instant_count bigint NOT NULL DEFAULT 1,
    ADD CONSTRAINT batch_schedule_event_instants_ck CHECK (instant_count >= 1);

DELETE FROM batch_schedule_event WHERE outcome = 'SKIPPED_CLAIMED';
