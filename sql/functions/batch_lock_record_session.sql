-- Record the caller's session as the owner's again (after the owner
-- reconnected), if the lock is still its own. The session is checked to be
-- the client's (p_session_pid/p_session_start, CB003 otherwise).
CREATE OR REPLACE FUNCTION batch_lock_record_session(p_lock_name varchar, p_owner_id varchar,
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
