"""Payload filters: a condition on an event's envelope that decides whether an endpoint gets it.

The form is the MongoDB-like one Convoy's users know: a document maps dotted paths
(``data.amount``, ``data.terminal_id``) to a value (equality) or to operators (``$eq``,
``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin``, ``$exists``); ``$and`` and
``$or`` take lists of such documents. Every key of a document must hold for it to match.

``compile_filter`` checks a condition once, when an endpoint is created or changed, and
names the first bad part by its keys (``("data.amount", "$regex")``); the checked form is a
tree of small closures, so the dispatcher evaluates a condition without interpreting its
JSON again. Rules that keep a receiver's expectations plain:

- a path walks objects only; a missing path equals nothing, so ``$eq``/``$in`` fail and
  ``$ne``/``$nin`` hold on it (as in MongoDB);
- ``$gt``, ``$gte``, ``$lt``, ``$lte`` compare numbers with numbers and strings with strings
  (ISO times compare as strings); any other pairing is false;
- ``true`` never equals ``1``: JSON booleans and numbers stay apart.

A condition is bounded (``MAX_NODES`` parts, ``MAX_DEPTH`` levels, ``MAX_LIST`` values in a
list, ``MAX_PATH`` characters in a path) so that evaluating it costs little per event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

Matcher = Callable[[Any], bool]
"""A compiled condition: the parsed envelope in, whether it matches out."""

MAX_NODES = 100
MAX_DEPTH = 6
MAX_LIST = 100
MAX_PATH = 200
_COMPARE = ("$gt", "$gte", "$lt", "$lte")
_OPERATORS = ("$eq", "$ne", "$in", "$nin", "$exists", *_COMPARE)
_MISSING = object()


Where = tuple[str, ...]
"""The keys (and list positions) leading to a part of a condition."""


class FilterError(ValueError):
    """A condition that cannot be used: ``where`` leads to the bad part (() for the whole)."""

    def __init__(self, where: Where, detail: str) -> None:
        super().__init__(detail)
        self.where = where
        self.detail = detail


def compile_filter(condition: Any) -> Matcher:
    """The matcher of ``condition`` (a JSON object), or ``FilterError`` naming its bad part."""
    if not isinstance(condition, dict):
        raise FilterError((), "A filter is a JSON object of paths to values or operators.")
    budget = [MAX_NODES]
    return _document(condition, (), 0, budget)


def body_filter(condition: dict[str, Any] | None) -> Callable[[bytes], bool]:
    """Whether an event's body meets an endpoint's stored ``condition``, as a function of the
    body, the condition compiled once (None or ``{}``: every body does). A condition that
    cannot be used, or a body that is not JSON, lets the event through: a filter never loses
    an event because of an error of its own."""
    if not condition:
        return _every
    try:
        matches = compile_filter(condition)
    except FilterError:
        return _every

    def meets(body: bytes) -> bool:
        try:
            return matches(orjson.loads(body))
        except orjson.JSONDecodeError:
            return True

    return meets


def meets(condition: dict[str, Any] | None, body: bytes) -> bool:
    """Whether one event's body meets ``condition`` (``body_filter`` for many bodies)."""
    return body_filter(condition)(body)


def _every(_body: bytes) -> bool:
    return True


def _spend(budget: list[int], where: Where) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise FilterError(where, f"A filter has at most {MAX_NODES} parts.")


def _document(condition: dict[str, Any], where: Where, depth: int, budget: list[int]) -> Matcher:
    if depth > MAX_DEPTH:
        raise FilterError(where, f"A filter nests at most {MAX_DEPTH} levels.")
    parts: list[Matcher] = []
    for key, value in condition.items():
        at = (*where, key)
        _spend(budget, at)
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value or len(value) > MAX_LIST:
                raise FilterError(at, f"{key} takes a list of 1 to {MAX_LIST} conditions.")
            inner = []
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    raise FilterError((*at, str(i)), "Each condition of the list is an object.")
                inner.append(_document(item, (*at, str(i)), depth + 1, budget))
            parts.append(_all(inner) if key == "$and" else _any(inner))
        elif key.startswith("$"):
            raise FilterError(at, "Only $and and $or may stand where a path is expected.")
        else:
            parts.append(_field(key, value, at, budget))
    return _all(parts)


def _field(path: str, value: Any, where: Where, budget: list[int]) -> Matcher:
    steps = path.split(".")
    if len(path) > MAX_PATH or not all(steps):
        raise FilterError(where, "A path is dotted names, such as data.amount.")
    get = _getter(tuple(steps))
    if isinstance(value, dict) and value and all(k.startswith("$") for k in value):
        tests = []
        for operator, operand in value.items():
            at = (*where, operator)
            _spend(budget, at)
            tests.append(_operator(operator, operand, at))
        return lambda envelope: all(test(get(envelope)) for test in tests)
    _value(value, where)
    return lambda envelope: _equal(get(envelope), value)


def _operator(operator: str, operand: Any, where: Where) -> Callable[[Any], bool]:
    if operator not in _OPERATORS:
        raise FilterError(where, f"Unknown operator; use one of {', '.join(_OPERATORS)}.")
    if operator == "$exists":
        if not isinstance(operand, bool):
            raise FilterError(where, "$exists takes true or false.")
        return lambda found: (found is not _MISSING) is operand
    if operator in ("$in", "$nin"):
        if not isinstance(operand, list) or len(operand) > MAX_LIST:
            raise FilterError(where, f"{operator} takes a list of at most {MAX_LIST} values.")
        for i, item in enumerate(operand):
            _value(item, (*where, str(i)))
        values = list(operand)
        if operator == "$in":
            return lambda found: any(_equal(found, v) for v in values)
        return lambda found: not any(_equal(found, v) for v in values)
    _value(operand, where)
    if operator == "$eq":
        return lambda found: _equal(found, operand)
    if operator == "$ne":
        return lambda found: not _equal(found, operand)
    if not _comparable(operand):
        raise FilterError(where, f"{operator} compares with a number or a string.")
    return _comparison(operator, operand)


def _comparison(operator: str, operand: float | str) -> Callable[[Any], bool]:
    number = not isinstance(operand, str)

    def same_kind(found: Any) -> bool:
        if number:
            return _comparable(found) and not isinstance(found, str)
        return isinstance(found, str)

    if operator == "$gt":
        return lambda found: same_kind(found) and found > operand
    if operator == "$gte":
        return lambda found: same_kind(found) and found >= operand
    if operator == "$lt":
        return lambda found: same_kind(found) and found < operand
    return lambda found: same_kind(found) and found <= operand


def _comparable(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)


def _value(value: Any, where: Where) -> None:
    """A value to compare with: a JSON scalar (null included)."""
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise FilterError(where, "Compare with a string, number, boolean or null.")


def _equal(found: Any, value: Any) -> bool:
    if found is _MISSING or isinstance(found, bool) != isinstance(value, bool):
        return False
    return bool(found == value)


def _getter(steps: tuple[str, ...]) -> Callable[[Any], Any]:
    def get(envelope: Any) -> Any:
        found = envelope
        for step in steps:
            if not isinstance(found, dict):
                return _MISSING
            found = found.get(step, _MISSING)
            if found is _MISSING:
                return _MISSING
        return found

    return get


def _all(parts: list[Matcher]) -> Matcher:
    if len(parts) == 1:
        return parts[0]
    return lambda envelope: all(part(envelope) for part in parts)


def _any(parts: list[Matcher]) -> Matcher:
    return lambda envelope: any(part(envelope) for part in parts)
