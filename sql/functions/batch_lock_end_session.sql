-- End the session (p_pid, p_start) of a lock's previous owner, and wait up to
-- 5 s for it to be gone (its transaction rolled back, its row locks freed).
-- Only that session: the pid must still carry the recorded start time, and
-- never the caller's own session. Ending another role's session needs the same
-- role, superuser or pg_signal_backend (and seeing its start time, the same
-- role, superuser or pg_read_all_stats); without them the session is left
-- running and the note says so.
--   ended  false only when the session still exists after this call
--   note   what happened, for the audit
CREATE OR REPLACE FUNCTION batch_lock_end_session(p_pid int, p_start timestamptz,
    OUT ended boolean, OUT note text)
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_ok boolean;
BEGIN
    ended := true;
    PERFORM pg_stat_clear_snapshot(); -- see the sessions as they are now
    IF p_pid IS NULL OR p_start IS NULL THEN
        note := 'no session recorded';
        RETURN;
    END IF;
    IF p_pid = pg_backend_pid() THEN
        note := 'its session is this one';
        RETURN;
    END IF;
    SELECT coalesce(a.state, 'unknown') INTO v_state FROM pg_stat_activity a
     WHERE a.pid = p_pid AND a.backend_start = p_start;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM pg_stat_activity a
                    WHERE a.pid = p_pid AND a.backend_start IS NULL) THEN
            ended := false;
            note := format('its session %s could not be checked (insufficient privilege) '
                           'and was left running', p_pid);
        ELSE
            note := format('its session %s had ended', p_pid);
        END IF;
        RETURN;
    END IF;
    BEGIN
        v_ok := pg_terminate_backend(p_pid, 5000);
    EXCEPTION WHEN insufficient_privilege THEN
        ended := false;
        note := format('its session %s (%s) could not be terminated: %s', p_pid, v_state,
                       SQLERRM);
        RETURN;
    END;
    IF v_ok THEN
        note := format('its session %s (%s) was terminated', p_pid, v_state);
    ELSE
        ended := false;
        note := format('its session %s (%s) did not end within 5 s', p_pid, v_state);
    END IF;
END
$$;
