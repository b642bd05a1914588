-- 022: run logs where the operator looks (issue 29).
--
-- What a run launched by a scheduler node or by the console printed (its
-- stdout and stderr, interleaved as they came) is kept per execution, by the
-- process that launched it: the last bytes only (the launcher's cap, 64 KiB),
-- with the count of bytes cut from the head, rewritten every few seconds
-- while the run goes on and once more when it ends. A run started from a
-- shell has no row: its output went to that shell.
--
-- Text, not bytea: what is shown is text. Bytes that are not UTF-8 (and NUL)
-- are replaced by U+FFFD before they are stored; bytes_dropped and
-- bytes_total count the bytes as printed.
--
-- The row goes with its execution (ON DELETE CASCADE): cleanup, which removes
-- executions, removes their logs without naming the table.
-- needs: batch_now
CREATE TABLE batch_job_execution_log (
    job_execution_id bigint      PRIMARY KEY
                                 REFERENCES batch_job_execution ON DELETE CASCADE,
    log              text        NOT NULL,
    bytes_dropped    bigint      NOT NULL DEFAULT 0 CHECK (bytes_dropped >= 0),
    bytes_total      bigint      NOT NULL DEFAULT 0 CHECK (bytes_total >= 0),
    updated_at       timestamptz NOT NULL DEFAULT batch_now()
);
