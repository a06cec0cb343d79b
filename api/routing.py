"""One declaration per route: its method, path, handler, permission, ``Idempotency-Key`` rule
and OpenAPI operation.

A routes module declares each of its routes once, on its ``Routes``. The app's router, the
permission a restricted key needs (``api.middleware.permissions``), whether a POST must carry
an ``Idempotency-Key`` (``api.middleware.idempotency``) and the route's operation in the
OpenAPI document (``api.description``) are all read from these declarations, so they cannot
disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from api.problems import Handler

Json = dict[str, Any]
H = TypeVar("H", bound=Handler)

_PARAMETER = re.compile(r"\{(\w+)")


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    """The route template, e.g. ``/v1/refunds/{refund_id}``."""
    handler: Handler
    permission: str | None
    """What a restricted key needs for it (``write`` implies ``read``); None: a public route."""
    operation: Json
    """Its OpenAPI operation as written: operationId, summary, parameters, requestBody,
    responses. ``api.description`` adds the tag, the security, the path's parameters, and
    under ``/v1`` the shared headers and Problem responses."""
    problems: tuple[str, ...]
    """Statuses of shared Problem responses it answers besides those of every ``/v1`` one."""
    key_required: bool
    """A POST that must carry an ``Idempotency-Key``: it creates a payment or moves money."""
    tag: str
    path_parameters: tuple[Json, ...]
    """The description of each parameter of ``path``, in its order."""

    def definition(self) -> web.RouteDef:
        """The aiohttp route; a GET answers HEAD with 405, as every route of the API does."""
        extra = {"allow_head": False} if self.method == "GET" else {}
        return web.RouteDef(self.method, self.path, self.handler, extra)


class Routes:
    """The routes of one module, declared by decorating their handlers; iterating gives the
    aiohttp route definitions (``app.add_routes(module.routes)``)."""

    def __init__(self, tag: str, *path_parameters: Json) -> None:
        self.tag = tag
        self._parameters = {parameter["name"]: parameter for parameter in path_parameters}
        self._declared: list[Route] = []

    @property
    def declared(self) -> tuple[Route, ...]:
        return tuple(self._declared)

    def __iter__(self) -> Iterator[web.RouteDef]:
        return (route.definition() for route in self._declared)

    def get(
        self, path: str, permission: str | None, operation: Json, *problems: str
    ) -> Callable[[H], H]:
        return self._declare("GET", path, permission, operation, problems)

    def post(
        self,
        path: str,
        permission: str | None,
        operation: Json,
        *problems: str,
        key_required: bool = False,
    ) -> Callable[[H], H]:
        return self._declare("POST", path, permission, operation, problems, key_required)

    def patch(
        self, path: str, permission: str, operation: Json, *problems: str
    ) -> Callable[[H], H]:
        return self._declare("PATCH", path, permission, operation, problems)

    def put(self, path: str, permission: str, operation: Json, *problems: str) -> Callable[[H], H]:
        return self._declare("PUT", path, permission, operation, problems)

    def delete(
        self, path: str, permission: str, operation: Json, *problems: str
    ) -> Callable[[H], H]:
        return self._declare("DELETE", path, permission, operation, problems)

    def _declare(
        self,
        method: str,
        path: str,
        permission: str | None,
        operation: Json,
        problems: tuple[str, ...],
        key_required: bool = False,
    ) -> Callable[[H], H]:
        parameters = tuple(self._parameters[name] for name in _PARAMETER.findall(path))

        def declare(handler: H) -> H:
            route = Route(
                method,
                path,
                handler,
                permission,
                operation,
                problems,
                key_required,
                self.tag,
                parameters,
            )
            self._declared.append(route)
            return handler

        return declare


DECLARED = web.AppKey("declared", dict[tuple[str, str], Route])
"""The app's declared routes by (method, route template)."""


def table(registries: Iterable[Routes]) -> dict[tuple[str, str], Route]:
    """Each declared route by (method, template); a route declared twice is an error."""
    found: dict[tuple[str, str], Route] = {}
    for registry in registries:
        for route in registry.declared:
            if (route.method, route.path) in found:
                raise ValueError(f"{route.method} {route.path} is declared twice")
            found[(route.method, route.path)] = route
    return found


def declared(request: web.Request) -> Route | None:
    """The declaration of the route ``request`` matched (HEAD counts as GET); None for none."""
    resource = request.match_info.route.resource
    if resource is None or request.match_info.http_exception is not None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    routes = request.app.get(DECLARED)
    return None if routes is None else routes.get((method, resource.canonical))
