"""Errors of organisations; the API maps each to one Problem code.

Tree::

    OrganisationError (a ServiceError)   an organisation request that cannot be done
    └── NameTaken                        an organisation of that name exists
"""

from __future__ import annotations

from svc.errors import ServiceError


class OrganisationError(ServiceError):
    """Base of the organisation errors."""


class NameTaken(OrganisationError):
    """An organisation with this name exists already."""
