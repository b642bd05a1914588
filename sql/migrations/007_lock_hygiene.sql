-- cbatch job repository: lock hygiene.
-- Applied by `cbatch schema init` after the earlier files, inside the same transaction.
--
-- 1. The owner's session is verified, not assumed. A connection pooler in
--    transaction or statement mode (PgBouncer pool_mode=transaction) gives a
--    client another server session for each transaction, and shares each
--    server session between clients: the lock would record a backend that a
--    bystander uses next, and a takeover would end the bystander's work.
--    Each client connection learns its server session (pid and start time)
--    once; every statement where the owner's session matters (taking the
--    lock, recording the session again, every chunk checkpoint) carries that
--    identity and raises CB003 when the session running it is another.
-- 2. Lock rows can go (cleanup; a partition's lock when its partition ends)
--    without a fencing token ever going backwards for a lock name: a new
--    row's token is drawn from batch_lock_token_seq, and whatever deletes a
--    row moves that sequence past the row's token first (trigger). A new
--    owner of an existing row still takes the row's token + 1: that row is
--    the name's whole history while it exists.

CREATE SEQUENCE batch_lock_token_seq AS bigint MINVALUE 1; -- CACHE 1: monotonic across sessions

-- Tokens handed out before this version, of rows that exist or went: the
-- sequence starts past all of them.
SELECT setval('batch_lock_token_seq', m)
  FROM (SELECT greatest((SELECT max(fencing_token) FROM batch_lock),
                        (SELECT max(fencing_token) FROM batch_lock_audit),
                        (SELECT max(fencing_token) FROM batch_job_execution),
                        (SELECT max(fencing_token) FROM batch_step_execution)) AS m) x
 WHERE m >= 1;
