"""Organisations, partners and the organisations they connect: who a request acts for."""

from svc.orgs.model import Scope

__all__ = ["Scope"]
