-- The shard of this session: concurrent sessions mostly touch different rows.
CREATE OR REPLACE FUNCTION batch_counter_shard() RETURNS smallint LANGUAGE sql STABLE AS $$
    SELECT (pg_backend_pid() % 8)::smallint
$$;
