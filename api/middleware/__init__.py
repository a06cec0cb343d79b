"""Middleware of every API request: tracing, metrics, Problems, API keys and idempotency."""
