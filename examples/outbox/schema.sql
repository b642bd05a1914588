-- The outbox example: messages that other code put in an outbox table, to be
-- delivered once each by however many workers drain it at once.
CREATE TABLE IF NOT EXISTS outbox (
    id         bigserial PRIMARY KEY,
    topic      text NOT NULL,
    payload    jsonb NOT NULL,
    status     text NOT NULL DEFAULT 'READY' CHECK (status IN ('READY', 'SENT')),
    created_at timestamptz NOT NULL DEFAULT now()
);
-- What the claims scan: the ready messages in id order (shrinks as they go).
CREATE INDEX IF NOT EXISTS outbox_ready_ix ON outbox (id) WHERE status = 'READY';

-- Where delivered messages land (stands in for a broker or a mail server):
-- one row per message, so a second delivery would be visible.
CREATE TABLE IF NOT EXISTS outbox_delivery (
    message_id       bigint PRIMARY KEY,
    topic            text NOT NULL,
    payload          jsonb NOT NULL,
    job_execution_id bigint NOT NULL,
    delivered_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
