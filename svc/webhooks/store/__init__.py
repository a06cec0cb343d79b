"""Webhook endpoints in PostgreSQL (``endpoints``), their rows and sealed columns (``rows``) and
the reads of the delivery log that belong to them (``log_reads``)."""

from svc.webhooks.store.endpoints import Endpoints

__all__ = ["Endpoints"]
