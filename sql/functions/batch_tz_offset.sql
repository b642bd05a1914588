-- Seconds east of UTC in zone p_zone at Unix time p_epoch.
CREATE OR REPLACE FUNCTION batch_tz_offset(p_epoch bigint, p_zone text) RETURNS int
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT extract(epoch FROM (to_timestamp(p_epoch) AT TIME ZONE p_zone)
                            - (to_timestamp(p_epoch) AT TIME ZONE 'UTC'))::int
$$;
