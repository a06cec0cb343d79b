"""Money in PostgreSQL: the ledger, each organisation's rates, refunds, chargebacks and
payouts; each a store held on the process context."""
