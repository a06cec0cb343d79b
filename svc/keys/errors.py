"""Errors of API keys; the API maps each to one Problem code.

Tree::

    ApiKeyError                an API key request that cannot be done
    ├── InvalidPermission      ``permission`` is not ``resource:read|write``
    └── PermissionsExceeded    a key acted on a key with permissions beyond its own
"""

from __future__ import annotations

from svc.errors import ServiceError


class ApiKeyError(ServiceError):
    """Base of the API key errors."""


class InvalidPermission(ApiKeyError):
    """``permission`` names no resource and access of ``svc.keys.model.PERMISSIONS``."""

    def __init__(self, permission: str) -> None:
        super().__init__(f"unknown permission {permission!r}")
        self.permission = permission


class PermissionsExceeded(ApiKeyError):
    """A key may only create, roll or revoke keys with a subset of its own permissions (and
    replay answers stored while it had them); ``permission`` is the first one it lacks."""

    def __init__(self, permission: str) -> None:
        super().__init__(f"the key lacks {permission}")
        self.permission = permission
