-- The ledger example: accounts to be posted into a ledger, once each.
CREATE TABLE IF NOT EXISTS account (
    id         bigserial PRIMARY KEY,
    seller_id  int NOT NULL,
    amount     numeric(12,2) NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    processed  boolean NOT NULL DEFAULT false
);
-- Serves the reader's scan: unprocessed rows in id order, and shrinks as they are posted.
CREATE INDEX IF NOT EXISTS account_unprocessed_ix ON account (id) WHERE NOT processed;

CREATE TABLE IF NOT EXISTS ledger (
    account_id       bigint PRIMARY KEY,
    seller_id        int NOT NULL,
    amount           numeric(12,2) NOT NULL,
    job_execution_id bigint NOT NULL
);
