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

-- p_mode: 'reread', 'fail', or 'exhausted' (re-read too often in a row).
-- p_keys: up to 10 keys (as text) of rows not in the expected state.
CREATE OR REPLACE FUNCTION batch_transition_conflict(p_mode text, p_table text,
                                                     p_expected bigint, p_changed bigint,
                                                     p_keys text[])
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING
        ERRCODE = CASE WHEN p_mode = 'reread' THEN 'CBR01' ELSE 'CBF01' END,
        MESSAGE = format('strict transition on %s: %s of %s source rows were not in the '
                         'expected state (taken by another run between read and write, or '
                         'transitioned already)%s; keys: %s',
                         p_table, p_expected - p_changed, p_expected,
                         CASE p_mode WHEN 'reread' THEN ', the chunk is read again'
                                     WHEN 'exhausted' THEN ', after too many re-reads in a row'
                                     ELSE '' END,
                         array_to_string(p_keys, ', ')
                         || CASE WHEN p_expected - p_changed > cardinality(p_keys)
                                 THEN ', ...' ELSE '' END);
END $$;
