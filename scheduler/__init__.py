"""Scheduler role: fan-out, the retry ladder, resend and test sends, outbox sweep, queue stats."""
