"""Money: fees, the double-entry ledger and balances, refunds, chargebacks and payouts."""
