"""Description of the routes without credentials: health, readiness, metrics, this document."""

from __future__ import annotations

from api.description.shapes import Json, json_content, obj, ok, problems, ref

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
        "Ready": obj(
            {
                "ready": {"type": "boolean"},
                "checks": obj(
                    {name: {"type": "boolean"} for name in READY_CHECKS},
                    description="Each check; ready only when all are true.",
                ),
                "warnings": obj(
                    {
                        "rabbitmq_blocked": {
                            "type": "boolean",
                            "description": "RabbitMQ blocks this process's publishes (a "
                            "memory or disk alarm). The process stays ready: the API's events "
                            "wait in the outbox and are published once the alarm clears.",
                        }
                    },
                    description="Conditions reported without making the process unready; "
                    "true when they hold.",
                ),
            },
            description="Readiness.",
        ),
    }


READY_CHECKS = ("postgresql", "redis", "rabbitmq", "consumers")


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
        "/ready": {
            "get": {
                **public,
                "operationId": "ready",
                "summary": (
                    "Readiness: 200 only when PostgreSQL, Redis and RabbitMQ are reachable and "
                    "every queue the process should consume has a live consumer"
                ),
                "responses": {
                    **ok("Ready", "Ready: every check true."),
                    "503": {
                        "description": "Not ready: the false checks say why (a probe, not a "
                        "Problem).",
                        "content": json_content(ref("Ready")),
                    },
                    **problems("500"),
                },
            }
        },
        "/metrics": {
            "get": {
                **public,
                "operationId": "metrics",
                "summary": "Prometheus metrics (text exposition format; names start svc_)",
                "responses": {
                    "200": {
                        "description": "The metrics.",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **problems("500"),
                },
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
                                "properties": {"openapi": {"const": "3.1.0"}},
                            }
                        ),
                    },
                    **problems("500"),
                },
            }
        },
    }
