"""Organisations and their API keys: who a request acts for."""

from svc.orgs.model import KEY_PREFIXES, Scope

__all__ = ["KEY_PREFIXES", "Scope"]
