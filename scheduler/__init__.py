"""Scheduler role: fan-out, resend and test sends, the outbox sweep, timers and queue stats."""
