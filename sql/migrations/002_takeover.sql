-- cbatch job repository, schema version 2: takeover of a frozen or crashed owner.
-- Applied by `cbatch schema init` after 001, inside the same transaction.
--
-- A frozen owner (SIGSTOP, a partitioned host) keeps its open chunk transaction
-- and its row locks (the lock row, its executions, the data) for as long as it
-- stays frozen. The lock now records the owner's database session (backend pid
-- and start time, a pid alone is reused), and a takeover ends that session
-- before it touches anything the session could hold.

ALTER TABLE batch_lock
    ADD COLUMN owner_backend_pid   int,
    ADD COLUMN owner_backend_start timestamptz;

-- A lock whose owner's process is known to be gone (same host, pid and process
-- start time) is taken over at once, without waiting for its lease.
ALTER TABLE batch_lock_audit DROP CONSTRAINT batch_lock_audit_outcome_ck;
ALTER TABLE batch_lock_audit ADD CONSTRAINT batch_lock_audit_outcome_ck CHECK (outcome IN
    ('ACQUIRED','SKIPPED_HELD','LEASE_EXPIRED_TAKEOVER','OWNER_DEAD_TAKEOVER',
     'HEARTBEAT_FAILED','FORCE_UNLOCKED','RELEASED','FENCED','ERROR'));
