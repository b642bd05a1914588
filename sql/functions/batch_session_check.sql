-- Raise CB003 unless the session running this is the one the client
-- connected to (p_pid, p_start: from its first query, see repository/session.c).
-- NULL p_pid: the caller did not say (an older client): nothing checked.
CREATE OR REPLACE FUNCTION batch_session_check(p_pid int, p_start timestamptz)
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
