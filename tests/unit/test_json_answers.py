"""Every JSON answer of the API and the ops port is serialised by orjson, through
``svc.http.json_response``: aiohttp's own ``web.json_response`` uses the standard library's
``json``, several times slower on a payment's body."""

from __future__ import annotations

import ast
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]


def test_no_answer_is_serialised_by_aiohttps_json_response() -> None:
    found = []
    for package in ("api", "svc", "dispatcher", "scheduler", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and node.attr == "json_response":
                    if isinstance(node.value, ast.Name) and node.value.id == "web":
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_json_response_is_orjson_with_the_status_headers_and_type_given() -> None:
    from svc.http import json_response

    body = {"id": "pay_1", "amount": 2450, "metadata": {"ü": "é"}, "next": None}
    answer = json_response(body, status=201, headers={"Location": "/v1/payments/pay_1"})
    assert answer.body == orjson.dumps(body)
    assert answer.status == 201 and answer.headers["Location"] == "/v1/payments/pay_1"
    assert answer.content_type == "application/json" and answer.charset == "utf-8"
