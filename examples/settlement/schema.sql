-- The daily settlement example: orders settled per seller and day, once.
CREATE TABLE IF NOT EXISTS orders (
    order_id   bigint PRIMARY KEY,
    seller_id  int NOT NULL,
    amount     numeric(12,2) NOT NULL,
    ordered_at timestamptz NOT NULL
);
-- Serves the day's scan of the settlement query.
CREATE INDEX IF NOT EXISTS orders_ordered_at_ix ON orders (ordered_at);

-- One row per seller and day, the day being midnight to midnight in time_zone
-- (the job's timeZone parameter): the same date in two zones is two settlements.
CREATE TABLE IF NOT EXISTS settlement_daily (
    settlement_date  date,
    time_zone        text,
    seller_id        int,
    amount           numeric(14,2) NOT NULL,
    order_count      int NOT NULL,
    job_execution_id bigint NOT NULL,
    PRIMARY KEY (settlement_date, time_zone, seller_id)
);
