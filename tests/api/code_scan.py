"""Every error code written in the API's source, found by reading it (not by running it).

A *taker* is a callable with a code argument: ``Problem`` (code and status), ``FieldError``
(a field code), and every function or class of the source that passes one of its own
parameters on as a code (``NotFound``, ``key_error``, ``named``, ...), found until no more are.
Each call of a taker gives its codes: string literals, either branch of a conditional, or a
local name assigned such values; a code passed through a taker's own parameter is counted at
the taker's callers. Any other argument is reported as unresolved.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

PROBLEM = "problem"
FIELD = "field"


@dataclass(frozen=True)
class Param:
    position: int | None  # None: keyword-only
    name: str


@dataclass(frozen=True)
class Takes:
    """One code argument of a taker, and where the Problem's status comes from."""

    kind: str
    code: Param
    status: int | Param | None = None


BASE_TAKERS: dict[str, tuple[Takes, ...]] = {
    "Problem": (Takes(PROBLEM, Param(1, "code"), Param(0, "status")),),
    "FieldError": (Takes(FIELD, Param(1, "code")),),
}


@dataclass(frozen=True)
class Found:
    kind: str
    code: str
    status: int | None  # None when the status is not a literal
    where: str


@dataclass
class Scan:
    found: list[Found] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    takers: dict[str, tuple[Takes, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Enclosing:
    """The function a call is written in, as its callers name it."""

    name: str
    params: tuple[Param, ...]
    assigned: dict[str, list[ast.expr]]


@dataclass(frozen=True)
class Call:
    node: ast.Call
    callee: str
    enclosing: Enclosing | None
    where: str


def _params(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> tuple[Param, ...]:
    positional = [*function.args.posonlyargs, *function.args.args][1 if method else 0 :]
    return (
        *(Param(i, a.arg) for i, a in enumerate(positional)),
        *(Param(None, a.arg) for a in function.args.kwonlyargs),
    )


def _assigned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr]]:
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
    return found


def _callee(call: ast.Call, classes: list[ast.ClassDef]) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        is_super = (
            isinstance(func.value, ast.Call) and getattr(func.value.func, "id", "") == "super"
        )
        if is_super and func.attr == "__init__" and classes:
            bases = [b.id for b in classes[-1].bases if isinstance(b, ast.Name)]
            return bases[0] if bases else None
        return func.attr
    return None


def calls(source: str, filename: str) -> Iterator[Call]:
    """Every call of ``source`` with its callee's name and the function it is written in."""

    def visit(
        node: ast.AST, classes: list[ast.ClassDef], enclosing: Enclosing | None
    ) -> Iterator[Call]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, [*classes, child], enclosing)
                continue
            inner = enclosing
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                method = bool(classes) and node is classes[-1]
                name = classes[-1].name if method and child.name == "__init__" else child.name
                inner = Enclosing(name, _params(child, method), _assigned(child))
            if isinstance(child, ast.Call):
                callee = _callee(child, classes)
                if callee is not None:
                    yield Call(child, callee, enclosing, f"{filename}:{child.lineno}")
            yield from visit(child, classes, inner)

    yield from visit(ast.parse(source), [], None)


def _argument(call: ast.Call, param: Param) -> ast.expr | None:
    if param.position is not None and param.position < len(call.args):
        return call.args[param.position]
    return next((k.value for k in call.keywords if k.arg == param.name), None)


def _own_param(node: ast.expr | None, enclosing: Enclosing | None) -> Param | None:
    if isinstance(node, ast.Name) and enclosing is not None:
        return next((p for p in enclosing.params if p.name == node.id), None)
    return None


def _discover(all_calls: list[Call]) -> dict[str, tuple[Takes, ...]]:
    """The takers: the base ones, and every function passing its own parameter on as a code."""
    takers = dict(BASE_TAKERS)
    changed = True
    while changed:
        changed = False
        for call in all_calls:
            if call.enclosing is None:
                continue
            for takes in takers.get(call.callee, ()):
                param = _own_param(_argument(call.node, takes.code), call.enclosing)
                if param is None:
                    continue
                new = Takes(takes.kind, param, _passed_status(call, takes))
                known = takers.get(call.enclosing.name, ())
                if new not in known:
                    takers[call.enclosing.name] = (*known, new)
                    changed = True
    return takers


def _passed_status(call: Call, takes: Takes) -> int | Param | None:
    """The status a new taker gives: a literal of the call, or a parameter of its own."""
    if not isinstance(takes.status, Param):
        return takes.status
    node = _argument(call.node, takes.status)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    return _own_param(node, call.enclosing)


def _literals(node: ast.expr, enclosing: Enclosing | None, depth: int = 0) -> list[str] | None:
    """The strings ``node`` can be, or None when that cannot be told from the source."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        body, orelse = (
            _literals(node.body, enclosing, depth),
            _literals(node.orelse, enclosing, depth),
        )
        return None if body is None or orelse is None else body + orelse
    if isinstance(node, ast.Name) and enclosing is not None and depth < 3:
        values = enclosing.assigned.get(node.id)
        if values:
            found = [_literals(value, enclosing, depth + 1) for value in values]
            if all(f is not None for f in found):
                return [s for f in found for s in f or []]
    return None


def _status(call: ast.Call, takes: Takes) -> int | None:
    if isinstance(takes.status, int):
        return takes.status
    if isinstance(takes.status, Param):
        node = _argument(call, takes.status)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
    return None


def scan(sources: dict[str, str]) -> Scan:
    """The codes of ``sources`` (file name → text)."""
    all_calls = [call for name, text in sources.items() for call in calls(text, name)]
    result = Scan(takers=_discover(all_calls))
    for call in all_calls:
        for takes in result.takers.get(call.callee, ()):
            node = _argument(call.node, takes.code)
            if node is None:
                continue
            own = _own_param(node, call.enclosing)
            if own is not None and call.enclosing is not None:
                passed_on = result.takers.get(call.enclosing.name, ())
                if any(t.code == own for t in passed_on):
                    continue
            values = _literals(node, call.enclosing)
            if values is None:
                result.unresolved.append(f"{call.where}: {ast.unparse(node)}")
                continue
            status = _status(call.node, takes) if takes.kind == PROBLEM else None
            result.found.extend(Found(takes.kind, v, status, call.where) for v in values)
    return result


def scan_tree(root: Path) -> Scan:
    """The codes of every module under ``root``."""
    return scan(
        {str(p.relative_to(root.parent)): p.read_text() for p in sorted(root.rglob("*.py"))}
    )
