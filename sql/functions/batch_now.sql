-- The repository's one clock. Every time judgment of the repository (leases
-- and locked_until, heartbeats, takeovers, claim lateness and misfire grace,
-- overlap liveness, recovery delay, cleanup cutoffs, audit times) reads this
-- function and nothing else, so that a simulation can drive time: a session
-- that sets `cbatch.virtual_now` (set_config('cbatch.virtual_now', <instant>,
-- false)) sees that instant; every other session, production included, sees
-- clock_timestamp(). The setting is per session, so each simulated node can
-- carry its own skew. An empty setting (after RESET) is the real clock.
-- One SQL expression, so the planner inlines it into its callers (and into
-- batch_lock_is_held); VOLATILE like clock_timestamp(), whose place it takes.
CREATE OR REPLACE FUNCTION batch_now()
RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
    SELECT coalesce(nullif(current_setting('cbatch.virtual_now', true), '')::timestamptz,
                    clock_timestamp())
$$;
