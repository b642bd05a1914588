-- tick: one row per committed run of the tick job.
CREATE TABLE IF NOT EXISTS tick_log (
    fired_for        text        NOT NULL,
    job_execution_id bigint      NOT NULL,
    pid              int         NOT NULL,
    logged_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
