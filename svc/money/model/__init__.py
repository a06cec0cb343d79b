"""Money's records and pure rules: balance transactions, refunds, chargebacks and payouts,
prices and their arithmetic, the payout schedule and the start-up check of both settings."""
