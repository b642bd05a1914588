-- Take the lock, or take it over when its lease has expired, or when the
-- caller knows its owner to be dead (p_dead_owner: the holder's owner id, whose
-- process the caller found gone on its own host). One call, one audit row. The
-- fencing token grows on every new owner, never resets: a new row's token
-- comes from batch_lock_token_seq (which a deleted row's token moved past),
-- an existing row's owner takes its token + 1. All times are the database's:
-- client clocks play no part.
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
-- A row deleted while we wait for it (cleanup) is looked for again.
-- The caller's own session (pg_backend_pid) is recorded as the new owner's;
-- p_session_pid/p_session_start, when given, must be that session (CB003
-- otherwise, nothing recorded: see batch_session_check).
-- note: what happened to the old owner's session (also in the audit detail).
CREATE OR REPLACE FUNCTION batch_lock_acquire(p_lock_name varchar, p_owner_id varchar,
    p_lease_seconds double precision, p_dead_owner varchar DEFAULT NULL,
    p_session_pid int DEFAULT NULL, p_session_start timestamptz DEFAULT NULL,
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
    v_gone boolean;
    v_expired boolean;
    e record;
BEGIN
    PERFORM batch_session_check(p_session_pid, p_session_start);
    SELECT a.backend_start INTO v_start FROM pg_stat_get_activity(v_pid) a;
    LOOP
        -- A plain read never waits, even on a frozen owner's row lock.
        SELECT * INTO l FROM batch_lock b WHERE b.lock_name = p_lock_name;
        IF NOT FOUND THEN
            INSERT INTO batch_lock AS b (lock_name, owner_id, fencing_token, locked_until,
                                         locked_at, updated_at, owner_backend_pid,
                                         owner_backend_start)
            VALUES (p_lock_name, p_owner_id, nextval('batch_lock_token_seq'),
                    batch_now() + make_interval(secs => p_lease_seconds),
                    batch_now(), batch_now(), v_pid, v_start)
            ON CONFLICT (lock_name) DO NOTHING
            RETURNING b.fencing_token INTO fencing_token;
            IF FOUND THEN
                outcome := 'ACQUIRED';
                EXIT;
            END IF;
            CONTINUE; -- another first taker won: look again
        END IF;
        v_locked := false;
        v_gone := false;
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            SELECT * INTO STRICT l FROM batch_lock b WHERE b.lock_name = p_lock_name
               FOR UPDATE;
            v_locked := true;
        EXCEPTION
            WHEN lock_not_available THEN
                v_locked := false;
            WHEN no_data_found THEN
                v_gone := true; -- deleted (cleanup) meanwhile
        END;
        PERFORM set_config('lock_timeout', v_saved, true);
        CONTINUE WHEN v_gone;
        EXIT WHEN v_locked;
        -- Locked by an open transaction. Not ours to take (a live lease, or
        -- a release kept until its lock-at-least-for): held, whatever that
        -- transaction does (it can only extend it).
        IF l.locked_until >= batch_now()
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
        v_expired := l.locked_until < batch_now();
        IF v_expired OR (NOT l.released AND l.owner_id = p_dead_owner) THEN
            IF NOT l.released AND l.owner_backend_pid IS DISTINCT FROM v_ended_pid THEN
                SELECT * INTO e FROM batch_lock_end_session(l.owner_backend_pid,
                                                            l.owner_backend_start);
                v_note := e.note;
                old_session_ended := e.ended;
            END IF;
            UPDATE batch_lock b SET owner_id = p_owner_id, fencing_token = l.fencing_token + 1,
                   locked_until = batch_now() + make_interval(secs => p_lease_seconds),
                   locked_at = batch_now(), updated_at = batch_now(),
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
        held_left_seconds := greatest(0, extract(epoch FROM held_until - batch_now()));
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
