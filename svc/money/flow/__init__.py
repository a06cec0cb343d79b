"""Money's use cases: what a succeeded payment books, refunds, chargebacks and payouts."""
