-- cbatch job repository, schema version 3: partitioned steps.
--
-- A partitioned (manager) step execution has one worker step execution per
-- partition, created with it in one transaction and named
-- "<manager>:partition<i>". A worker claims an open partition with
-- FOR UPDATE SKIP LOCKED and runs it under its own batch_lock row
-- ("cbatch.partition:<step_execution_id>"): lease, heartbeat and fencing token
-- exactly like a job's lock, so a dead or cut-off worker's partition goes to
-- the next claimant and the old owner's late checkpoint is refused.
-- Wake-ups travel as NOTIFY on channel cbatch_partitions (payload: the job
-- execution id) when partitions appear, are handed back or end.

ALTER TABLE batch_step_execution
    ADD COLUMN manager_step_execution_id bigint REFERENCES batch_step_execution,
    ADD COLUMN partition_index  int,
    -- The current (or last) claimant: its process identity, a readable worker
    -- name (host, pid, thread), and the partition lock it holds it under.
    ADD COLUMN owner_id         varchar(200),
    ADD COLUMN worker           varchar(200),
    ADD COLUMN lock_name        varchar(400),
    ADD COLUMN fencing_token    bigint,
    ADD COLUMN claim_count      int NOT NULL DEFAULT 0;
CREATE INDEX batch_step_execution_manager_ix ON batch_step_execution (manager_step_execution_id)
    WHERE manager_step_execution_id IS NOT NULL;
-- What workers look for: open partitions (few rows, however old the repository).
CREATE INDEX batch_step_execution_open_partition_ix ON batch_step_execution (step_execution_id)
    WHERE partition_index IS NOT NULL AND status IN ('STARTING', 'STARTED');
