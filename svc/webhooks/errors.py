"""Errors of the endpoint use cases; the API maps each to one Problem code.

Tree::

    EndpointDisabled (a ServiceError)   the endpoint is disabled, so it takes no test send,
                                        resend or recover until it is enabled again
"""

from __future__ import annotations

from svc.errors import ServiceError


class EndpointDisabled(ServiceError):
    """``endpoint_id`` is disabled; enable it before sending it anything."""

    def __init__(self, endpoint_id: str) -> None:
        super().__init__(f"endpoint {endpoint_id} is disabled")
        self.endpoint_id = endpoint_id
