-- Money: fees on payments, a double-entry ledger with balances, refunds, chargebacks,
-- payouts, per-organisation pricing and the partner programme. Amounts are integer Rappen.

-- A partner creates connected organisations and receives 10 % of the percentage part of
-- their fees; partner_id names the partner an organisation is connected to.
ALTER TABLE organisations
    ADD COLUMN partner boolean NOT NULL DEFAULT false,
    ADD COLUMN partner_id text REFERENCES organisations (id);
CREATE INDEX organisations_partner ON organisations (partner_id, created_at DESC, id DESC)
    WHERE partner_id IS NOT NULL;

-- Per-organisation prices by kind; an organisation without a row pays SVC_PRICING's.
CREATE TABLE pricing (
    org_id       text NOT NULL REFERENCES organisations (id),
    kind         text NOT NULL CHECK (kind IN ('online', 'phone', 'terminal', 'chargeback')),
    basis_points integer NOT NULL CHECK (basis_points BETWEEN 0 AND 10000),
    fixed        bigint NOT NULL CHECK (fixed >= 0),
    PRIMARY KEY (org_id, kind)
);

-- The fee charged when the payment succeeded (null before).
ALTER TABLE payments ADD COLUMN fee bigint CHECK (fee >= 0);

-- One row per organisation, environment and currency that has money: what payouts and
-- balance checks lock, and when the scheduler last paid it out.
CREATE TABLE balances (
    org_id        text NOT NULL REFERENCES organisations (id),
    env           text NOT NULL CHECK (env IN ('test', 'live')),
    currency      text NOT NULL,
    paid_through  timestamptz NOT NULL,
    PRIMARY KEY (org_id, env, currency)
);
CREATE INDEX balances_due ON balances (paid_through);

-- The ledger. A balance transaction is one money movement of one organisation; its entries
-- (two or more legs) sum to zero, and its 'balance' legs sum to its amount. Neither table is
-- ever updated or deleted from.
CREATE TABLE balance_transactions (
    id                text PRIMARY KEY,
    org_id            text NOT NULL REFERENCES organisations (id),
    env               text NOT NULL CHECK (env IN ('test', 'live')),
    currency          text NOT NULL,
    type              text NOT NULL CHECK (type IN ('payment', 'fee', 'partner_commission',
                          'refund', 'fee_refund', 'partner_commission_reversal',
                          'chargeback', 'chargeback_fee', 'payout')),
    amount            bigint NOT NULL CHECK (amount <> 0),
    source_id         text NOT NULL,
    connected_org_id  text REFERENCES organisations (id),
    available_on      timestamptz NOT NULL,
    created_at        timestamptz NOT NULL
);
CREATE INDEX balance_transactions_scope
    ON balance_transactions (org_id, env, created_at DESC, id DESC);
CREATE INDEX balance_transactions_balance
    ON balance_transactions (org_id, env, currency, available_on);
CREATE INDEX balance_transactions_commissions ON balance_transactions (org_id, env, created_at)
    WHERE type IN ('partner_commission', 'partner_commission_reversal');
CREATE INDEX balance_transactions_source ON balance_transactions (source_id);

CREATE TABLE ledger_entries (
    transaction_id  text NOT NULL REFERENCES balance_transactions (id),
    account         text NOT NULL
                    CHECK (account IN ('balance', 'card_network', 'fees', 'bank')),
    amount          bigint NOT NULL CHECK (amount <> 0),
    PRIMARY KEY (transaction_id, account)
);

CREATE FUNCTION ledger_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    legs integer;
    own bigint;
BEGIN
    SELECT coalesce(sum(amount), 0), count(*),
           coalesce(sum(amount) FILTER (WHERE account = 'balance'), 0)
      INTO total, legs, own
      FROM ledger_entries WHERE transaction_id = NEW.id;
    IF legs < 2 OR total <> 0 OR own <> NEW.amount THEN
        RAISE EXCEPTION 'balance transaction % does not balance (% legs, sum %, own %, amount %)',
            NEW.id, legs, total, own, NEW.amount;
    END IF;
    RETURN NULL;
END $$;

-- Checked at commit, once every leg of the transaction is written.
CREATE CONSTRAINT TRIGGER balance_transactions_balanced
    AFTER INSERT ON balance_transactions
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_balanced();

CREATE FUNCTION ledger_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only: % on % refused', TG_OP, TG_TABLE_NAME;
END $$;

CREATE TRIGGER balance_transactions_immutable BEFORE UPDATE OR DELETE ON balance_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_immutable();
CREATE TRIGGER ledger_entries_immutable BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_immutable();

CREATE TABLE refunds (
    id                      text PRIMARY KEY,
    org_id                  text NOT NULL REFERENCES organisations (id),
    env                     text NOT NULL CHECK (env IN ('test', 'live')),
    payment_id              text NOT NULL REFERENCES payments (id),
    amount                  bigint NOT NULL CHECK (amount > 0),
    currency                text NOT NULL,
    status                  text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    failure_code            text,
    balance_transaction_id  text REFERENCES balance_transactions (id),
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL
);
CREATE INDEX refunds_payment ON refunds (payment_id, created_at DESC, id DESC);
CREATE INDEX refunds_pending ON refunds (created_at) WHERE status = 'pending';

CREATE TABLE chargebacks (
    id          text PRIMARY KEY,
    org_id      text NOT NULL REFERENCES organisations (id),
    env         text NOT NULL CHECK (env IN ('test', 'live')),
    payment_id  text NOT NULL UNIQUE REFERENCES payments (id),
    amount      bigint NOT NULL CHECK (amount > 0),
    fee         bigint NOT NULL CHECK (fee >= 0),
    currency    text NOT NULL,
    reason      text NOT NULL,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX chargebacks_scope ON chargebacks (org_id, env, created_at DESC, id DESC);

CREATE TABLE payouts (
    id                      text PRIMARY KEY,
    org_id                  text NOT NULL REFERENCES organisations (id),
    env                     text NOT NULL CHECK (env IN ('test', 'live')),
    amount                  bigint NOT NULL CHECK (amount > 0),
    currency                text NOT NULL,
    status                  text NOT NULL,
    automatic               boolean NOT NULL,
    arrival_date            date NOT NULL,
    balance_transaction_id  text NOT NULL REFERENCES balance_transactions (id),
    created_at              timestamptz NOT NULL
);
CREATE INDEX payouts_scope ON payouts (org_id, env, created_at DESC, id DESC);
