-- Sample the wait events of the database's client backends while a benchmark runs
-- (bench/RESULTS.md, "performance 2 (issue 30)"). Every ~3 ms, for SECS seconds,
-- one row per other client backend goes into the unlogged table wait_samples, with TAG.
-- PL/pgSQL does not see psql variables, so substitute the placeholders:
--
--   sed -e "s/TAG/cbatch/" -e "s/SECS/30/" bench/wait_sample.sql | psql "$DB" &
--   build-bench/bench/cbatch-bench --db "$DB" --rounds 1 --warmup 0 --only cbatch ...
--
-- pg_stat_clear_snapshot() makes each read see the current activity (otherwise a
-- transaction keeps its first snapshot of pg_stat_activity).
CREATE UNLOGGED TABLE IF NOT EXISTS wait_samples (tag text, t timestamptz, pid int, app text,
    state text, wtype text, wevent text, q text);
DO $$
DECLARE t_end timestamptz := clock_timestamp() + make_interval(secs => SECS);
BEGIN
  WHILE clock_timestamp() < t_end LOOP
    PERFORM pg_stat_clear_snapshot();
    INSERT INTO wait_samples
      SELECT 'TAG', clock_timestamp(), pid, application_name, state, wait_event_type, wait_event,
             left(regexp_replace(query, '\s+', ' ', 'g'), 40)
        FROM pg_stat_activity
       WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
         AND datname = current_database() AND query NOT LIKE '%wait_samples%';
    PERFORM pg_sleep(0.003);
  END LOOP;
END $$;
-- Shares per run, for the backends that ran the chunk UPDATE (first to last chunk):
--   WITH w AS (SELECT tag, pid, min(t) a, max(t) b FROM wait_samples
--               WHERE q LIKE 'WITH _cb_u%' AND state = 'active' GROUP BY tag, pid)
--   SELECT tag, state, wtype, wevent, left(q, 20), count(*)
--     FROM wait_samples p JOIN w USING (tag, pid) WHERE p.t BETWEEN w.a AND w.b
--    GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 6 DESC;
