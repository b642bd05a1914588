-- The sales_totals example: invoices added into per-customer totals, each invoice once.
CREATE TABLE IF NOT EXISTS invoice (
    id          bigint PRIMARY KEY,
    customer_id int NOT NULL,
    amount      numeric(12,2) NOT NULL,
    issued_at   timestamptz NOT NULL,
    processed   boolean NOT NULL DEFAULT false
);
-- Serves the reader's scan (customer, then invoice order) and the partitions'
-- customer ranges; shrinks as invoices are added.
CREATE INDEX IF NOT EXISTS invoice_unprocessed_ix ON invoice (customer_id, id)
    WHERE NOT processed;

CREATE TABLE IF NOT EXISTS customer_total (
    customer_id   int PRIMARY KEY,
    total         numeric(16,2) NOT NULL,
    invoice_count bigint NOT NULL,
    first_at      timestamptz,
    last_at       timestamptz
);
