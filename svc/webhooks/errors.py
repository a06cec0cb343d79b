"""Errors of the endpoint use cases; the API maps each to one Problem code.

Tree::

    EndpointDisabled (a ServiceError)   the endpoint is disabled, so it takes no test send,
                                        resend or recover until it is enabled again
    TooManyEndpoints (a ServiceError)   the scope has ``SVC_MAX_ENDPOINTS_PER_SCOPE``
                                        endpoints already
"""

from __future__ import annotations

from svc.errors import ServiceError


class EndpointDisabled(ServiceError):
    """``endpoint_id`` is disabled; enable it before sending it anything."""

    def __init__(self, endpoint_id: str) -> None:
        super().__init__(f"endpoint {endpoint_id} is disabled")
        self.endpoint_id = endpoint_id


class TooManyEndpoints(ServiceError):
    """The scope has ``most`` endpoints, as many as it may; delete one to make another."""

    def __init__(self, most: int) -> None:
        super().__init__(f"the scope has {most} endpoints, its most")
        self.most = most
