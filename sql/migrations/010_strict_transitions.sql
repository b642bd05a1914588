-- cbatch job repository: strict status transitions (issue 18).
-- Applied by `cbatch schema init` after the earlier files, inside the same transaction.
--
-- A strict status transition (the status writer, options version 3) checks,
-- inside the chunk's transaction, that it changed as many source rows as the
-- chunk read. In a pipeline a count is read only after COMMIT has run, so a
-- short count must be an error raised by the statement itself:
-- batch_transition_conflict raises it, with a SQLSTATE that tells the chunk
-- engine what to do (CBR01: roll back and read the chunk again; CBF01: roll
-- back and fail the step, restartably).
--
-- Every such event is counted on the step execution, apart from the chunk
-- (which rolls back): transition_conflict_count.

ALTER TABLE batch_step_execution
    ADD COLUMN transition_conflict_count bigint NOT NULL DEFAULT 0;
