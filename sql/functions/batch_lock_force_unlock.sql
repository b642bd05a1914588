-- Release a lock by hand (unlock --force), recorded. A holder that still
-- holds it has its session ended first (as a takeover does): its chunk in
-- flight could not commit anyway, and a frozen holder's open transaction
-- would otherwise block the release and the next owner. Unlocked = false when
-- there is no such lock. Raises 55P03 when the row stays locked by a session
-- that could not be ended.
CREATE OR REPLACE FUNCTION batch_lock_force_unlock(p_lock_name varchar, p_who varchar, p_detail text,
    OUT unlocked boolean, OUT note text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    l batch_lock%ROWTYPE;
    v_saved text := current_setting('lock_timeout');
    v_ended_pid int := -1; -- the old session already dealt with (-1: none yet)
    v_tries int := 0;
    v_done boolean;
    e record;
BEGIN
    unlocked := false;
    LOOP
        v_done := false;
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            SELECT * INTO l FROM batch_lock b WHERE b.lock_name = p_lock_name FOR UPDATE;
            v_done := true;
        EXCEPTION WHEN lock_not_available THEN
            v_done := false;
        END;
        PERFORM set_config('lock_timeout', v_saved, true);
        IF v_done AND l.lock_name IS NULL THEN
            RETURN; -- no such lock
        END IF;
        IF NOT v_done THEN
            -- Held in an open transaction: its holder's, when it is frozen.
            SELECT * INTO l FROM batch_lock b WHERE b.lock_name = p_lock_name;
        END IF;
        IF NOT l.released AND l.owner_backend_pid IS DISTINCT FROM v_ended_pid THEN
            SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid,
                                                        l.owner_backend_start);
            v_ended_pid := l.owner_backend_pid;
            note := e.note;
        END IF;
        EXIT WHEN v_done;
        v_tries := v_tries + 1;
        IF v_tries >= 25 THEN
            RAISE EXCEPTION 'lock "%" stays locked by an open transaction (%)', p_lock_name,
                coalesce(note, 'no session recorded') USING ERRCODE = '55P03';
        END IF;
    END LOOP;
    UPDATE batch_lock b SET locked_until = batch_now(), released = true,
           updated_at = batch_now()
     WHERE b.lock_name = p_lock_name;
    INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, job_execution_id,
                                  detail)
    VALUES (l.lock_name, p_who, 'FORCE_UNLOCKED', l.fencing_token, l.job_execution_id,
            p_detail || ' (holder was ' || l.owner_id || coalesce('; ' || note, '') || ')');
    unlocked := true;
END
$$;
