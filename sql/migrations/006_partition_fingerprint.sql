-- cbatch job repository, schema version 6: partitions go only to workers that
-- can run them.
--
-- A rolling upgrade runs programs of two builds side by side. A worker whose
-- program lacks a partitioned step, or defines it differently, must leave its
-- partitions to a worker that has the definition the manager had, exactly as
-- the scheduler leaves jobs it lacks. The manager records the fingerprint of
-- its step definition (cb__step_fingerprint in framework/worker.c: an XXH3
-- hash of the job name, the step name and what of the definition changes what
-- a partition does) on its own step execution when it creates the partitions;
-- a claimant says which (job, step, fingerprint) it can run and is offered
-- only matching partitions. Partitions created before this version carry no
-- fingerprint: any worker with the job and the step may run them.
--
-- Workers also leave alone the partitions of an execution whose manager is a
-- process of the worker's own host that is provably gone (its owner id names
-- a pid that no longer runs with that start time): the restart of that
-- execution buries them, and running them meanwhile would only race it.
--
-- batch_partition_worker remembers which worker processes looked for work
-- lately and what they can run, so that `show` can say why a partition
-- waits. One row per worker process (not for the threads of a launching
-- process, which work for one execution only), rewritten at most every few
-- seconds while it looks for work, deleted when it leaves; rows of processes
-- not seen for a day (killed ones) go.

ALTER TABLE batch_step_execution ADD COLUMN step_fingerprint varchar(64);

CREATE TABLE batch_partition_worker (
    owner_id  varchar(200) PRIMARY KEY,
    worker    varchar(200) NOT NULL,
    -- [{"job": name, "step": manager step name or null, "fingerprint": hex or null}]
    runs      jsonb        NOT NULL,
    last_seen timestamptz  NOT NULL
);
