"""Endpoint lookups for the hot path: parsed URL and pre-keyed signer, cached briefly."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from yarl import URL

from dispatcher.guard import literal_blocked
from svc.signing import Signer
from svc.webhooks.store import Endpoints


@dataclass(frozen=True, slots=True)
class Target:
    """What sending needs from an endpoint."""

    id: str
    url: URL
    signer: Signer
    private_literal: bool
    """The URL names a non-public IP literal (checked once here, not per delivery)."""


class EndpointCache:
    """Caches endpoints for ``ttl`` seconds; a deleted or changed endpoint is seen within it."""

    def __init__(self, endpoints: Endpoints, ttl: float) -> None:
        self._endpoints = endpoints
        self._ttl = ttl
        self._cached: dict[str, tuple[float, Target | None]] = {}
        self._loading: dict[str, asyncio.Future[Target | None]] = {}

    async def get(self, endpoint_id: str) -> Target | None:
        """The endpoint, or None when it no longer exists."""
        hit = self._cached.get(endpoint_id)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        pending = self._loading.get(endpoint_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future = asyncio.get_running_loop().create_future()
        self._loading[endpoint_id] = future
        try:
            target = await self._load(endpoint_id)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # marked retrieved here; waiters re-raise it
            raise
        finally:
            del self._loading[endpoint_id]
        future.set_result(target)
        self._cached[endpoint_id] = (time.monotonic() + self._ttl, target)
        if len(self._cached) > 100_000:
            self._cached.clear()
        return target

    async def _load(self, endpoint_id: str) -> Target | None:
        endpoint = await self._endpoints.load(endpoint_id)
        if endpoint is None:
            return None
        url = URL(endpoint.url)
        return Target(endpoint.id, url, Signer(endpoint.secret), literal_blocked(url.host or ""))
