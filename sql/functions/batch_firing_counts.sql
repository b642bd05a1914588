-- What a firing counts for in the schedule counters of metrics. A run of
-- skipped instants (p_instants, sql/021) counts each instant it stands for.
CREATE OR REPLACE FUNCTION batch_firing_counts(p_status varchar, p_kind varchar, p_missed bigint,
    p_instants bigint DEFAULT 1,
    OUT fired int, OUT missed bigint, OUT nolaunch int, OUT orphaned int,
    OUT overlapped bigint)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (p_status IN ('LAUNCHED', 'FINISHED', 'ORPHANED'))::int,
           CASE WHEN p_kind <> 'SCHEDULED' AND p_missed > 0 THEN p_missed ELSE 0 END,
           (p_status = 'FAILED_TO_LAUNCH')::int, (p_status = 'ORPHANED')::int,
           CASE WHEN p_status = 'SKIPPED_OVERLAP' THEN coalesce(p_instants, 1) ELSE 0 END
$$;
