"""The OpenAPI description: served, valid 3.1.0, and describing exactly the app's routes."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import aiohttp
from openapi_spec_validator import validate

from api.app import build_app
from api.dashboard import PAGES
from api.dashboard import PREFIX as DASHBOARD
from api.description import SCHEMAS, document
from api.routes import ALL, permissions
from api.routes.checkout import checkout_path
from svc.context import Context
from svc.terminal.protocol import DEVICE_PATH
from tests.conftest import Running

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def described(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in doc["paths"].items()
        for method in item
        if method in METHODS
    }


def operations(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, operation)
        for path, item in doc["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    ]


async def test_served_document_is_valid_openapi_3_1(service: Running) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(service.base_url + "/openapi.json") as response:
            assert response.status == 200
            assert response.content_type == "application/json"
            served = await response.json()
    validate(served)
    assert served["openapi"] == "3.1.0"
    assert served["info"]["version"] == "1.0.0"
    assert served == document()


async def test_every_route_is_described_and_every_description_is_a_route(ctx: Context) -> None:
    app = build_app(ctx)
    routes = {
        (route.method, route.resource.canonical)
        for route in app.router.routes()
        if route.resource is not None and not _dashboard(route.resource.canonical)
    }
    doc = described(document(checkout_path(ctx)))
    assert routes - doc == set(), "routes of the app missing from the description"
    assert doc - routes == set(), "described operations that the app does not serve"
    assert not any(_dashboard(path) for _, path in doc), "the dashboard is no part of the API"


def _dashboard(path: str) -> bool:
    """The dashboard's pages and those beside it (API reference, Problem types, favicon), for
    people: no part of the API, so not in its description."""
    people = (DASHBOARD, *PAGES)
    return path in people or path.startswith(tuple(page + "/" for page in people))


def test_v1_operations_need_the_api_key_and_document_401() -> None:
    doc = document()
    schemes = doc["components"]["securitySchemes"]
    assert {name: (s["type"], s["scheme"]) for name, s in schemes.items()} == {
        "bearer": ("http", "bearer"),
        "terminal": ("http", "bearer"),
    }
    for path, operation in operations(doc):
        if path.startswith("/v1/"):
            method = next(m for m, o in doc["paths"][path].items() if o is operation)
            permission = permissions()[(method.upper(), path)]
            assert operation["security"] == [{"bearer": [permission]}], path
            assert "401" in operation["responses"], path
        elif path == DEVICE_PATH:
            assert operation["security"] == [{"terminal": []}], path
            assert "401" in operation["responses"], path
        else:
            assert operation["security"] == [], path


def test_every_error_response_is_a_problem() -> None:
    doc = document()
    shared = doc["components"]["responses"]
    for path, operation in operations(doc):
        ids = operation["operationId"]
        assert ids, path
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            resolved = (
                shared[response["$ref"].rsplit("/", 1)[1]] if "$ref" in response else response
            )
            assert list(resolved["content"]) == ["application/problem+json"], (path, status)
            schema = resolved["content"]["application/problem+json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Problem"}, (path, status)


def test_operation_ids_are_unique() -> None:
    ids = [operation["operationId"] for _, operation in operations(document())]
    assert len(ids) == len(set(ids))


def test_problem_schema_names_code_and_field_errors() -> None:
    schemas = document()["components"]["schemas"]
    problem = schemas["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "code"}
    assert problem["properties"]["errors"]["items"] == {"$ref": "#/components/schemas/FieldError"}
    assert set(schemas["FieldError"]["required"]) == {"field", "code", "detail"}


API = Path(__file__).parents[2] / "api"


def _modules(package: str, *besides: str) -> set[str]:
    return {path.stem for path in (API / package).glob("*.py")} - {"__init__", *besides}


def test_each_route_module_has_its_schema_module_of_the_same_name() -> None:
    routes = _modules("routes")
    # webhook_events describes the calls the service makes to endpoints, not routes;
    # event_examples builds example bodies of those calls.
    descriptions = _modules("description", "shapes", "webhook_events", "event_examples")
    assert routes - descriptions == set(), "route modules without a schema module"
    assert descriptions - routes == set(), "schema modules of no route module"


def test_every_route_module_declares_its_routes_in_the_list_of_all() -> None:
    declared = [importlib.import_module(f"api.routes.{name}").routes for name in _modules("routes")]
    assert sorted(map(id, declared)) == sorted(map(id, ALL))


def test_every_schema_module_is_listed_and_every_tag_is_described_once() -> None:
    # endpoint_operations is included by webhooks; webhook_events gives the webhooks, and
    # event_examples example bodies of them.
    listed = {module.__name__.rsplit(".", 1)[1] for module in SCHEMAS}
    besides = ("shapes", "endpoint_operations", "webhook_events", "event_examples")
    assert listed == _modules("description", *besides)
    doc = document()
    tags = [tag["name"] for tag in doc["tags"]]
    assert len(tags) == len(set(tags)), tags
    used = {tag for _, operation in operations(doc) for tag in operation["tags"]}
    assert used == set(tags)
    assert all(tag["description"] for tag in doc["tags"])
