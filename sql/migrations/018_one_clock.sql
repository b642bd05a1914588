-- 018: one clock (issue 27). The times a row gets when a statement leaves
-- them out (creation, audit and event times, a node's start and first
-- heartbeat) come from batch_now(), the repository's one clock
-- (sql/functions/batch_now.sql), like every other time the repository
-- judges or records: a session that sets cbatch.virtual_now sees its rows
-- stamped with that instant, every other session with the real clock, as
-- before. Only the defaults change: no row is rewritten, and a default is
-- read when a row is inserted, so it costs what batch_now() costs there.
--
-- The defaults now depend on batch_now() (pg_depend): it can be replaced
-- (CREATE OR REPLACE, the same signature), not dropped while they stand.
-- batch_schema_version is created by the loader before any function exists
-- (repository/schema.c), hence with the real clock read directly; it is set
-- here too.
--
-- needs: batch_now
ALTER TABLE batch_schema_version ALTER COLUMN installed_at SET DEFAULT batch_now();
ALTER TABLE batch_job_instance ALTER COLUMN create_time SET DEFAULT batch_now();
ALTER TABLE batch_job_execution
    ALTER COLUMN create_time SET DEFAULT batch_now(),
    ALTER COLUMN last_updated SET DEFAULT batch_now();
ALTER TABLE batch_step_execution
    ALTER COLUMN create_time SET DEFAULT batch_now(),
    ALTER COLUMN last_updated SET DEFAULT batch_now();
ALTER TABLE batch_lock_audit ALTER COLUMN event_time SET DEFAULT batch_now();
ALTER TABLE batch_schedule
    ALTER COLUMN created_at SET DEFAULT batch_now(),
    ALTER COLUMN updated_at SET DEFAULT batch_now();
ALTER TABLE batch_scheduler_node
    ALTER COLUMN started_at SET DEFAULT batch_now(),
    ALTER COLUMN heartbeat_at SET DEFAULT batch_now();
ALTER TABLE batch_schedule_firing ALTER COLUMN claimed_at SET DEFAULT batch_now();
ALTER TABLE batch_schedule_event ALTER COLUMN recorded_at SET DEFAULT batch_now();
