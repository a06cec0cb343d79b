"""The registry of error codes (api/codes.py) is the one list: the source, the tables of the
Errors page (docs/api/errors.md), the OpenAPI description and the docstrings name its codes and
no other."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from api.codes import ANY_ERROR_STATUS, FIELD_CODES, PROBLEM_CODES
from api.description import document
from api.problems import FieldError, InvalidInput, NotFound, Problem, Unauthorized
from tests.api.code_scan import FIELD, PROBLEM, scan, scan_tree

ROOT = Path(__file__).parents[2]
API = ROOT / "api"
ERRORS = ROOT / "docs" / "api" / "errors.md"


def test_every_code_written_in_the_api_is_listed_with_its_status() -> None:
    found = scan_tree(API)
    unlisted = [
        f"{f.where}: {f.code}"
        for f in found.found
        if f.code not in (PROBLEM_CODES if f.kind == PROBLEM else FIELD_CODES)
    ]
    assert unlisted == [], "codes missing from api/codes.py"
    wrong_status = [
        f"{f.where}: {f.code} with {f.status}"
        for f in found.found
        if f.kind == PROBLEM and f.status is not None
        if f.status not in PROBLEM_CODES[f.code].statuses
    ]
    assert wrong_status == [], "Problems built with a status api/codes.py does not list"
    assert found.unresolved == [], "code arguments that are no literal: pass a literal"


def test_every_listed_code_is_used() -> None:
    found = scan_tree(API).found
    used = {kind: {f.code for f in found if f.kind == kind} for kind in (PROBLEM, FIELD)}
    assert set(PROBLEM_CODES) - used[PROBLEM] == set(), "Problem codes nothing answers"
    assert set(FIELD_CODES) - used[FIELD] == set(), "field codes nothing answers"


def test_the_scan_follows_helpers_and_reports_what_it_cannot_read() -> None:
    source = """
class Gone(Problem):
    def __init__(self, code, detail):
        super().__init__(410, code, detail)

def refuse(name, code):
    raise InvalidInput([FieldError(name, code, "No.")])

def handler(request):
    reason = "missing" if request else "expird"
    refuse("a", reason)
    raise Gone(request.code, "Gone.")
    raise Gone("payment_gone", "Gone.")
"""
    found = scan({"example.py": source})
    assert {(f.kind, f.code, f.status) for f in found.found} == {
        (FIELD, "missing", None),
        (FIELD, "expird", None),
        (PROBLEM, "payment_gone", 410),
    }
    assert found.unresolved == ["example.py:12: request.code"]


@pytest.mark.parametrize(
    "build",
    [
        lambda: Problem(409, "endpoint_disabld", "A misspelt code."),
        lambda: Problem(404, "endpoint_disabled", "A listed code with another status."),
        lambda: NotFound("endpoint_disabled", "A listed code with another status."),
        lambda: Unauthorized("no_key", "An unlisted code."),
        lambda: FieldError("url", "invalid_uri", "A misspelt field code."),
        lambda: InvalidInput([FieldError("url", "nope", "An unlisted field code.")]),
    ],
)
def test_an_unlisted_code_is_refused_where_it_is_built(build: Any) -> None:
    with pytest.raises(ValueError, match="api/codes.py|status"):
        build()


def test_http_error_takes_any_error_status_of_the_http_layer() -> None:
    assert Problem(417, "http_error", "Expectation Failed").status == 417
    with pytest.raises(ValueError):
        Problem(302, "http_error", "Found")


def test_the_description_lists_the_codes_as_the_enum_of_code() -> None:
    schemas = document()["components"]["schemas"]
    assert schemas["Problem"]["properties"]["code"]["enum"] == sorted(PROBLEM_CODES)
    assert schemas["FieldError"]["properties"]["code"]["enum"] == sorted(FIELD_CODES)


def _table(section: str) -> list[list[str]]:
    """The rows of the first table under the Errors page's heading ``section``, as cells."""
    text = ERRORS.read_text()
    start = text.index(f"\n{section}\n") + len(section) + 2
    rows: list[list[str]] = []
    for line in text[start:].splitlines():
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert rows, f"no table under {section!r} in docs/api/errors.md"
    return rows[2:]  # without the header and its rule


def _codes(cell: str) -> list[str]:
    return re.findall(r"`([a-z][a-z0-9_]*)`", cell)


def test_the_problem_table_lists_exactly_the_registry() -> None:
    statuses: dict[str, frozenset[int]] = {}
    for row in _table("## Problem codes"):
        status = ANY_ERROR_STATUS if row[1] == "other" else frozenset({int(row[1])})
        for code in _codes(row[0]):
            assert code not in statuses, f"{code} is in the Problem table twice"
            statuses[code] = status
    assert statuses == {code: listed.statuses for code, listed in PROBLEM_CODES.items()}


def test_the_field_table_lists_exactly_the_registry() -> None:
    listed = {code for row in _table("## Field codes (`errors[].code`)") for code in _codes(row[0])}
    assert listed == set(FIELD_CODES)


SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


def _prose_and_names(node: Any, prose: list[str], names: set[str]) -> None:
    """Descriptions and summaries go to ``prose``; every other string (a property, a
    parameter, an enum value, an operation id) to ``names``."""
    if isinstance(node, dict):
        for key, value in node.items():
            names.add(key)
            if key in ("description", "summary") and isinstance(value, str):
                prose.append(value)
            else:
                _prose_and_names(value, prose, names)
    elif isinstance(node, list):
        for item in node:
            _prose_and_names(item, prose, names)
    elif isinstance(node, str):
        names.add(node)


def test_codes_named_in_the_description_prose_are_listed() -> None:
    """A snake_case word in a description is a name the document defines, or a code."""
    prose: list[str] = []
    names: set[str] = set()
    _prose_and_names(document(), prose, names)
    words = {word for text in prose for word in SNAKE.findall(text)}
    unknown = words - names - set(PROBLEM_CODES) - set(FIELD_CODES)
    assert unknown == set(), "words of the description that are no name and no listed code"


# "409 ``terminal_busy``", and a list after the first: "409 ``a``, ``b`` or ``c``".
NAMED = re.compile(
    r"\b([1-5][0-9]{2})\s+``([a-z][a-z0-9_]*)``((?:(?:,|\s+or|\s+and)\s+``[a-z0-9_]+``)*)"
)


def _docstrings(root: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                text = ast.get_docstring(node, clean=False)
                if text:
                    found.append((str(path.relative_to(ROOT)), text))
    return found


def test_codes_named_with_a_status_in_docstrings_are_listed_with_it() -> None:
    """``409 ``terminal_busy`` `` in a docstring (the routes' "Shapes:") is a listed code of
    that status (or, for 422, a field code)."""
    wrong: list[str] = []
    named: dict[str, set[int]] = defaultdict(set)
    for where, text in _docstrings(API):
        for match in NAMED.finditer(text):
            status = int(match.group(1))
            for code in [match.group(2), *re.findall(r"``([a-z0-9_]+)``", match.group(3))]:
                named[code].add(status)
                listed = PROBLEM_CODES.get(code)
                if listed is not None and status in listed.statuses:
                    continue
                if status == 422 and code in FIELD_CODES:
                    continue
                wrong.append(f"{where}: {status} {code}")
    assert named, "the pattern no longer matches how docstrings name codes"
    assert wrong == []
