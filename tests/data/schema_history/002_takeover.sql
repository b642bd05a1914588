-- cbatch job repository, schema version 2: takeover of a frozen or crashed owner.
-- Applied by `cbatch schema init` after 001, inside the same transaction.
--
-- A frozen owner (SIGSTOP, a partitioned host) keeps its open chunk transaction
-- and its row locks (the lock row, its executions, the data) for as long as it
-- stays frozen. The lock now records the owner's database session (backend pid
-- and start time, a pid alone is reused), and a takeover ends that session
-- before it touches anything the session could hold.

ALTER TABLE batch_lock
    ADD COLUMN owner_backend_pid   int,
    ADD COLUMN owner_backend_start timestamptz;

-- A lock whose owner's process is known to be gone (same host, pid and process
-- start time) is taken over at once, without waiting for its lease.
ALTER TABLE batch_lock_audit DROP CONSTRAINT batch_lock_audit_outcome_ck;
ALTER TABLE batch_lock_audit ADD CONSTRAINT batch_lock_audit_outcome_ck CHECK (outcome IN
    ('ACQUIRED','SKIPPED_HELD','LEASE_EXPIRED_TAKEOVER','OWNER_DEAD_TAKEOVER',
     'HEARTBEAT_FAILED','FORCE_UNLOCKED','RELEASED','FENCED','ERROR'));

-- End the session (p_pid, p_start) of a lock's previous owner, and wait up to
-- 5 s for it to be gone (its transaction rolled back, its row locks freed).
-- Only that session: the pid must still carry the recorded start time, and
-- never the caller's own session. Ending another role's session needs the same
-- role, superuser or pg_signal_backend (and seeing its start time, the same
-- role, superuser or pg_read_all_stats); without them the session is left
-- running and the note says so.
--   ended  false only when the session still exists after this call
--   note   what happened, for the audit
CREATE FUNCTION batch_lock_end_session(p_pid int, p_start timestamptz,
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

-- Take the lock, or take it over when its lease has expired, or when the
-- caller knows its owner to be dead (p_dead_owner: the holder's owner id, whose
-- process the caller found gone on its own host). One call, one audit row. The
-- fencing token grows on every new owner, never resets. All times are the
-- database's: client clocks play no part.
--
-- Nothing here waits long on a previous owner's locks: the row lock is taken
-- with a short lock_timeout. Under it, a replaced owner's session is ended
-- (batch_lock_end_session: whatever else it holds, executions and data rows,
-- is freed before the new owner's launch needs it), so that the old owner,
-- if it still runs, sees the takeover as soon as its session is gone. If an
-- open transaction holds the row itself (a frozen owner inside its chunk),
-- its session is ended first, and the lock taken again. A row that stays
-- locked by a holder with a live lease is a skip at once; one whose owner's
-- session could not be ended gives up after about 5 s (a skip, saying why).
-- The caller's own session (pg_backend_pid) is recorded as the new owner's.
-- note: what happened to the old owner's session (also in the audit detail).
DROP FUNCTION batch_lock_acquire(varchar, varchar, double precision);
CREATE FUNCTION batch_lock_acquire(p_lock_name varchar, p_owner_id varchar,
    p_lease_seconds double precision, p_dead_owner varchar DEFAULT NULL,
    OUT fencing_token bigint, OUT outcome varchar, OUT holder varchar,
    OUT held_until timestamptz, OUT held_left_seconds double precision,
    OUT old_session_ended boolean, OUT note text)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    l batch_lock%ROWTYPE;
    v_pid int := pg_backend_pid();
    v_start timestamptz;
    v_saved text := current_setting('lock_timeout');
    v_ended_pid int := -1; -- the old session already dealt with (-1: none yet)
    v_note text;
    v_tries int := 0;
    v_locked boolean;
    v_expired boolean;
    e record;
BEGIN
    SELECT a.backend_start INTO v_start FROM pg_stat_activity a WHERE a.pid = v_pid;
    LOOP
        -- A plain read never waits, even on a frozen owner's row lock.
        SELECT * INTO l FROM batch_lock b WHERE b.lock_name = p_lock_name;
        IF NOT FOUND THEN
            INSERT INTO batch_lock AS b (lock_name, owner_id, fencing_token, locked_until,
                                         locked_at, updated_at, owner_backend_pid,
                                         owner_backend_start)
            VALUES (p_lock_name, p_owner_id, 1,
                    clock_timestamp() + make_interval(secs => p_lease_seconds),
                    clock_timestamp(), clock_timestamp(), v_pid, v_start)
            ON CONFLICT (lock_name) DO NOTHING
            RETURNING b.fencing_token INTO fencing_token;
            IF FOUND THEN
                outcome := 'ACQUIRED';
                EXIT;
            END IF;
            CONTINUE; -- another first taker won: look again
        END IF;
        v_locked := false;
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            SELECT * INTO STRICT l FROM batch_lock b WHERE b.lock_name = p_lock_name
               FOR UPDATE;
            v_locked := true;
        EXCEPTION WHEN lock_not_available THEN
            v_locked := false;
        END;
        PERFORM set_config('lock_timeout', v_saved, true);
        EXIT WHEN v_locked;
        -- Locked by an open transaction. Not ours to take (a live lease, or
        -- a release kept until its lock-at-least-for): held, whatever that
        -- transaction does (it can only extend it).
        IF l.locked_until >= clock_timestamp()
           AND (l.released OR l.owner_id IS DISTINCT FROM p_dead_owner) THEN
            outcome := 'SKIPPED_HELD';
            EXIT;
        END IF;
        -- Of an owner that is being replaced (a frozen one): end its session,
        -- which rolls that transaction back, then try again.
        IF NOT l.released AND l.owner_backend_pid IS DISTINCT FROM v_ended_pid THEN
            SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid,
                                                        l.owner_backend_start);
            v_ended_pid := l.owner_backend_pid;
            v_note := e.note;
            old_session_ended := e.ended;
        END IF;
        v_tries := v_tries + 1;
        IF v_tries >= 25 THEN
            outcome := 'SKIPPED_HELD';
            v_note := format('its row stays locked by an open transaction; %s',
                             coalesce(v_note, 'no session recorded'));
            EXIT;
        END IF;
    END LOOP;
    IF outcome IS NULL THEN
        -- We hold the row lock: decide on its newest version.
        holder := l.owner_id;
        held_until := l.locked_until;
        v_expired := l.locked_until < clock_timestamp();
        IF v_expired OR (NOT l.released AND l.owner_id = p_dead_owner) THEN
            IF NOT l.released AND l.owner_backend_pid IS DISTINCT FROM v_ended_pid THEN
                SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid,
                                                            l.owner_backend_start);
                v_note := e.note;
                old_session_ended := e.ended;
            END IF;
            UPDATE batch_lock b SET owner_id = p_owner_id, fencing_token = l.fencing_token + 1,
                   locked_until = clock_timestamp() + make_interval(secs => p_lease_seconds),
                   locked_at = clock_timestamp(), updated_at = clock_timestamp(),
                   released = false, job_execution_id = NULL, owner_backend_pid = v_pid,
                   owner_backend_start = v_start
             WHERE b.lock_name = p_lock_name;
            fencing_token := l.fencing_token + 1;
            outcome := CASE WHEN l.released THEN 'ACQUIRED'
                            WHEN v_expired THEN 'LEASE_EXPIRED_TAKEOVER'
                            ELSE 'OWNER_DEAD_TAKEOVER' END;
        ELSE
            outcome := 'SKIPPED_HELD';
        END IF;
    ELSIF outcome = 'SKIPPED_HELD' THEN
        holder := l.owner_id;
        held_until := l.locked_until;
    END IF;
    note := v_note;
    IF outcome = 'SKIPPED_HELD' THEN
        fencing_token := NULL;
        held_left_seconds := greatest(0, extract(epoch FROM held_until - clock_timestamp()));
    END IF;
    INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, detail)
    VALUES (p_lock_name, p_owner_id, outcome, coalesce(fencing_token, l.fencing_token),
            CASE outcome
              WHEN 'SKIPPED_HELD' THEN format('held by %s until %s', l.owner_id, l.locked_until)
                   || coalesce('; ' || v_note, '')
              WHEN 'LEASE_EXPIRED_TAKEOVER' THEN
                format('lease of %s expired at %s', l.owner_id, l.locked_until)
                   || coalesce('; ' || v_note, '')
              WHEN 'OWNER_DEAD_TAKEOVER' THEN
                format('owner %s is gone (its process on this host ended), lease until %s',
                       l.owner_id, l.locked_until) || coalesce('; ' || v_note, '')
              ELSE '' END);
END
$$;

-- Release a lock by hand (unlock --force), recorded. A holder that still
-- holds it has its session ended first (as a takeover does): its chunk in
-- flight could not commit anyway, and a frozen holder's open transaction
-- would otherwise block the release and the next owner. Unlocked = false when
-- there is no such lock. Raises 55P03 when the row stays locked by a session
-- that could not be ended.
CREATE FUNCTION batch_lock_force_unlock(p_lock_name varchar, p_who varchar, p_detail text,
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
    UPDATE batch_lock b SET locked_until = clock_timestamp(), released = true,
           updated_at = clock_timestamp()
     WHERE b.lock_name = p_lock_name;
    INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, fencing_token, job_execution_id,
                                  detail)
    VALUES (l.lock_name, p_who, 'FORCE_UNLOCKED', l.fencing_token, l.job_execution_id,
            p_detail || ' (holder was ' || l.owner_id || coalesce('; ' || note, '') || ')');
    unlocked := true;
END
$$;

-- Record the caller's session as the owner's again (after the owner
-- reconnected), if the lock is still its own.
CREATE FUNCTION batch_lock_record_session(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE batch_lock
       SET owner_backend_pid = pg_backend_pid(),
           owner_backend_start = (SELECT a.backend_start FROM pg_stat_activity a
                                   WHERE a.pid = pg_backend_pid())
     WHERE lock_name = p_lock_name AND owner_id = p_owner_id
       AND fencing_token = p_fencing_token AND NOT released;
    RETURN FOUND;
END
$$;
