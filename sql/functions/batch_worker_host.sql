-- "host/pid/thread" -> "host" (a host name may itself hold a slash).
CREATE OR REPLACE FUNCTION batch_worker_host(p_worker varchar) RETURNS varchar
LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(p_worker, '/[^/]*/[^/]*$', '')
$$;
