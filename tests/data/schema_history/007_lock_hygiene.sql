-- cbatch job repository: lock hygiene.
-- Applied by `cbatch schema init` after the earlier files, inside the same transaction.
--
-- 1. The owner's session is verified, not assumed. A connection pooler in
--    transaction or statement mode (PgBouncer pool_mode=transaction) gives a
--    client another server session for each transaction, and shares each
--    server session between clients: the lock would record a backend that a
--    bystander uses next, and a takeover would end the bystander's work.
--    Each client connection learns its server session (pid and start time)
--    once; every statement where the owner's session matters (taking the
--    lock, recording the session again, every chunk checkpoint) carries that
--    identity and raises CB003 when the session running it is another.
-- 2. Lock rows can go (cleanup; a partition's lock when its partition ends)
--    without a fencing token ever going backwards for a lock name: a new
--    row's token is drawn from batch_lock_token_seq, and whatever deletes a
--    row moves that sequence past the row's token first (trigger). A new
--    owner of an existing row still takes the row's token + 1: that row is
--    the name's whole history while it exists.

CREATE SEQUENCE batch_lock_token_seq AS bigint MINVALUE 1; -- CACHE 1: monotonic across sessions

-- Tokens handed out before this version, of rows that exist or went: the
-- sequence starts past all of them.
SELECT setval('batch_lock_token_seq', m)
  FROM (SELECT greatest((SELECT max(fencing_token) FROM batch_lock),
                        (SELECT max(fencing_token) FROM batch_lock_audit),
                        (SELECT max(fencing_token) FROM batch_job_execution),
                        (SELECT max(fencing_token) FROM batch_step_execution)) AS m) x
 WHERE m >= 1;

-- Deleted lock rows: the next row of the same name must get a greater token.
CREATE FUNCTION batch_lock_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_max bigint;
    v_next bigint;
BEGIN
    SELECT max(fencing_token) INTO v_max FROM old_rows;
    IF v_max IS NULL THEN
        RETURN NULL;
    END IF;
    -- The value nextval would give next; only ever moved forward, so a
    -- concurrent nextval can at worst repeat a token of another name.
    SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO v_next
      FROM batch_lock_token_seq;
    IF v_next <= v_max THEN
        PERFORM setval('batch_lock_token_seq', v_max, true);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER batch_lock_deleted_tg AFTER DELETE ON batch_lock
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION batch_lock_deleted();

-- Raise CB003 unless the session running this is the one the client
-- connected to (p_pid, p_start: from its first query, see framework/conn.c).
-- NULL p_pid: the caller did not say (an older client): nothing checked.
CREATE FUNCTION batch_session_check(p_pid int, p_start timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_start timestamptz;
BEGIN
    IF p_pid IS NULL THEN
        RETURN;
    END IF;
    SELECT a.backend_start INTO v_start FROM pg_stat_get_activity(pg_backend_pid()) a;
    IF p_pid = pg_backend_pid() AND v_start IS NOT DISTINCT FROM p_start THEN
        RETURN;
    END IF;
    RAISE EXCEPTION 'transaction pooling is not supported: the server session of this '
        'connection changed (it was backend % started %, it is now backend % started %)',
        p_pid, p_start, pg_backend_pid(), v_start
        USING ERRCODE = 'CB003',
              DETAIL = 'cbatch needs one server session per connection (prepared statements, '
                       'LISTEN, the lock owner''s session): use PgBouncer pool_mode=session, '
                       'not transaction or statement, or connect directly';
END
$$;

-- As in version 2, and: p_session_pid/p_session_start, when given, must be
-- the session running this (CB003 otherwise, nothing recorded); a new row's
-- token comes from batch_lock_token_seq; a row deleted while we wait for it
-- is looked for again.
DROP FUNCTION batch_lock_acquire(varchar, varchar, double precision, varchar);
CREATE FUNCTION batch_lock_acquire(p_lock_name varchar, p_owner_id varchar,
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

-- As in version 2, and the session recorded is checked to be the client's
-- (p_session_pid/p_session_start, CB003 otherwise).
DROP FUNCTION batch_lock_record_session(varchar, varchar, bigint);
CREATE FUNCTION batch_lock_record_session(p_lock_name varchar, p_owner_id varchar,
    p_fencing_token bigint, p_session_pid int DEFAULT NULL,
    p_session_start timestamptz DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM batch_session_check(p_session_pid, p_session_start);
    UPDATE batch_lock
       SET owner_backend_pid = pg_backend_pid(),
           owner_backend_start = (SELECT a.backend_start
                                    FROM pg_stat_get_activity(pg_backend_pid()) a)
     WHERE lock_name = p_lock_name AND owner_id = p_owner_id
       AND fencing_token = p_fencing_token AND NOT released;
    RETURN FOUND;
END
$$;

-- The chunk checkpoint as in version 3, and: the session running it is
-- checked to be the client's (p_session_pid/p_session_start, CB003
-- otherwise: in the same round trip as the chunk, no extra one), and the lock
-- row records that verified session (a partition's claim records the
-- claimant's session unverified; its first chunk makes it verified).
DROP FUNCTION batch_chunk_checkpoint(bigint, bigint, bigint, bigint, bigint, bigint, bigint,
    bigint, bigint, bigint, jsonb, bigint, jsonb, varchar, bigint, double precision);
CREATE FUNCTION batch_chunk_checkpoint(
    p_step_execution_id bigint, p_version bigint,
    p_read bigint, p_write bigint, p_filter bigint, p_commit bigint,
    p_read_skip bigint, p_write_skip bigint, p_process_skip bigint, p_duplicate bigint,
    p_context jsonb, p_job_execution_id bigint, p_job_context jsonb,
    p_lock_name varchar, p_fencing_token bigint, p_lease_seconds double precision,
    p_session_pid int DEFAULT NULL, p_session_start timestamptz DEFAULT NULL)
RETURNS varchar LANGUAGE plpgsql AS $$
DECLARE
    v_status varchar;
    v_partition int;
BEGIN
    PERFORM batch_session_check(p_session_pid, p_session_start);
    IF p_lock_name IS NOT NULL THEN
        UPDATE batch_lock
           SET locked_until = greatest(locked_until,
                   clock_timestamp() + make_interval(secs => p_lease_seconds)),
               updated_at = clock_timestamp(),
               owner_backend_pid = coalesce(p_session_pid, owner_backend_pid),
               owner_backend_start = CASE WHEN p_session_pid IS NULL THEN owner_backend_start
                                          ELSE p_session_start END
         WHERE lock_name = p_lock_name AND fencing_token = p_fencing_token
           AND NOT released;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'fenced off: lock "%" no longer carries fencing token %',
                p_lock_name, p_fencing_token USING ERRCODE = 'CB002';
        END IF;
    END IF;
    UPDATE batch_step_execution
       SET read_count = read_count + p_read,
           write_count = write_count + p_write,
           filter_count = filter_count + p_filter,
           commit_count = commit_count + p_commit,
           read_skip_count = read_skip_count + p_read_skip,
           write_skip_count = write_skip_count + p_write_skip,
           process_skip_count = process_skip_count + p_process_skip,
           duplicate_target_write_count = duplicate_target_write_count + p_duplicate
               + coalesce(nullif(current_setting('cbatch.duplicate_writes', true), '')::bigint, 0),
           version = version + 1,
           last_updated = clock_timestamp()
     WHERE step_execution_id = p_step_execution_id AND version = p_version
    RETURNING partition_index INTO v_partition;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'step execution % is not at version % (changed by another process)',
            p_step_execution_id, p_version USING ERRCODE = 'CB001';
    END IF;
    IF p_context IS NOT NULL THEN
        UPDATE batch_step_execution_context SET serialized_context = p_context
         WHERE step_execution_id = p_step_execution_id;
    END IF;
    IF p_job_context IS NOT NULL THEN
        UPDATE batch_job_execution_context SET serialized_context = p_job_context
         WHERE job_execution_id = p_job_execution_id;
    END IF;
    IF v_partition IS NOT NULL THEN
        SELECT status INTO v_status FROM batch_job_execution
         WHERE job_execution_id = p_job_execution_id;
    ELSE
        UPDATE batch_job_execution SET last_updated = clock_timestamp(),
               heartbeat_time = clock_timestamp()
         WHERE job_execution_id = p_job_execution_id
         RETURNING status INTO v_status;
    END IF;
    RETURN v_status;
END
$$;
