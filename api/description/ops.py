"""Description of the public routes without credentials: liveness and this document (readiness
and metrics are on the ops port, outside the API)."""

from __future__ import annotations

from api.openapi import Json, json_content, obj, ok, problems

TAG = "Operations"


def schemas() -> Json:
    return {
        "Health": obj(
            {
                "status": {"const": "ok"},
                "version": {"type": "string", "description": "The running version."},
            },
            description="Liveness.",
        ),
    }


def paths() -> Json:
    public: Json = {"tags": [TAG], "security": []}
    return {
        "/health": {
            "get": {
                **public,
                "operationId": "health",
                "summary": "Liveness: always ok while the process serves",
                "responses": {**ok("Health", "Alive."), **problems("500")},
            }
        },
        "/openapi.json": {
            "get": {
                **public,
                "operationId": "openapi",
                "summary": "This OpenAPI 3.1.0 description",
                "responses": {
                    "200": {
                        "description": "The description.",
                        "content": json_content(
                            {
                                "type": "object",
                                "required": ["openapi", "info", "paths"],
                                "properties": {
                                    "openapi": {"const": "3.1.0"},
                                    "info": {"type": "object"},
                                    "paths": {"type": "object"},
                                },
                            }
                        ),
                    },
                    **problems("500"),
                },
            }
        },
    }
