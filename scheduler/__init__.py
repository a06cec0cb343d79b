"""Scheduler role: resend and test sends, the outbox sweep, expiry, upkeep and other timers."""
