"""Objects named in a request's path, found in the request's scope only: an id of another
organisation or environment, or not of the kind's prefix, is a 404 exactly like a missing one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from aiohttp import web

from api.errors import NotFound
from svc.ids import has_prefix

T = TypeVar("T")


async def named(
    request: web.Request,
    param: str,
    prefix: str,
    load: Callable[[str], Awaitable[T | None]],
    code: str,
    detail: str,
) -> T:
    """The object whose id is the path parameter ``param``, loaded (in scope) by ``load``
    when the id has ``prefix``; else a 404 Problem ``code`` whose ``detail`` may name the id
    as ``{}``."""
    object_id = request.match_info[param]
    found = await load(object_id) if has_prefix(object_id, prefix) else None
    if found is None:
        raise NotFound(code, detail.format(object_id))
    return found
