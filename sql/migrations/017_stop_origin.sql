-- 017: who stopped an execution, as data (issue 25).
--
-- stop_origin says where the stop of a job execution came from:
--   OPERATOR  `stop` from the CLI, the console or the API (cb_repo_stop), set
--             in the statement that moves STARTING/STARTED to STOPPING, or
--             that ends a dead execution STOPPED at once;
--   SIGNAL    the process's own SIGTERM/SIGINT (e.g. a scheduler node's stop
--             passed on to its child, or the parent-death signal): set when
--             it ends STOPPED, or by a partition manager's stop request;
--   ENGINE    the engine stopped it of its own accord.
-- The first origin recorded stays: a process that is signalled after an
-- operator's stop ends with OPERATOR, and a burial (FAILED "owner lost")
-- keeps it. NULL: no stop was asked for. A schedule's recovery
-- (batch_schedule_plan_recovery, batch_schedule_take_recovery) never
-- restarts an operator's stop; it used to tell one by its message text,
-- which a live execution stopped by `stop` never carried.
--
-- A new nullable column without a default: no rewrite of the table (the
-- CHECK reads it once, all NULL).
ALTER TABLE batch_job_execution
    ADD COLUMN stop_origin varchar(16),
    ADD CONSTRAINT batch_job_execution_stop_origin_ck CHECK
        (stop_origin IN ('OPERATOR', 'SIGNAL', 'ENGINE'));

-- Before this column, the one stop that said so was that of a dead
-- execution, ended STOPPED at once by `stop` (cb_repo_stop).
UPDATE batch_job_execution
   SET stop_origin = 'OPERATOR'
 WHERE status = 'STOPPED' AND exit_message LIKE 'owner lost; stopped by operator%';
