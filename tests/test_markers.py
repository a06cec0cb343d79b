"""The suite's markers say what a test starts: ``servers`` exactly on the tests that start a
private PostgreSQL, RabbitMQ or Redis server, a TCP proxy or a forward proxy (tinyproxy),
``browser`` exactly on those that drive Chromium, ``harness`` exactly on the smoke runs of
``python -m benchmarks`` and ``python -m chaos`` (``make test-harness``; ``make test`` leaves
them out).

A test starts something when its body, a function of its module it calls or a fixture it takes
(from its module or a ``conftest.py`` above it), at any depth, does; read from the source, so a
marker cannot drift from what the test does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SERVERS = {
    "private_postgres",
    "private_postgres_pair",
    "private_rabbitmq",
    "private_rabbit_cluster",
    "PrivatePostgres",
    "PostgresPair",
    "PrivateRabbitMQ",
    "PrivateRabbitCluster",
    "PrivateRedis",
    "TcpProxy",
    "tinyproxy",
}
BROWSER = {"async_playwright"}
HARNESS = {"benchmarks", "chaos"}
"""Packages whose ``python -m`` run is a harness smoke run."""


KINDS = ("servers", "browser", "harness")

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Starts:
    """What one function starts by itself (one flag per kind of ``KINDS``), and the names it
    leans on for more: those it mentions (its helpers) and its parameters (its fixtures)."""

    kinds: tuple[bool, bool, bool]
    calls: frozenset[str]
    fixtures: frozenset[str]


def _called(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _runs_module(node: ast.List | ast.Tuple) -> str | None:
    """``pkg`` of a command written ``[..., "-m", "pkg", ...]``."""
    words = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
    for flag, module in zip(words, words[1:], strict=False):
        if flag == "-m" and isinstance(module, str):
            return module
    return None


def _starts(function: Function) -> Starts:
    nodes = list(ast.walk(function))
    called = {name for n in nodes if isinstance(n, ast.Call) and (name := _called(n))}
    commands = {_runs_module(n) for n in nodes if isinstance(n, (ast.List | ast.Tuple))}
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    return Starts(
        kinds=(bool(called & SERVERS), bool(called & BROWSER), bool(commands & HARNESS)),
        calls=frozenset(n.id for n in nodes if isinstance(n, ast.Name)),
        fixtures=frozenset(a.arg for a in arguments),
    )


def _is_fixture(function: Function) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
    return False


def _marks(decorators: list[ast.expr]) -> set[str]:
    """Names of the ``pytest.mark.<name>`` among decorators (or a ``pytestmark`` value)."""
    found = set()
    for expression in decorators:
        for node in ast.walk(expression):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "mark"
            ):
                found.add(node.attr)
    return found


@dataclass(frozen=True)
class Module:
    functions: dict[str, Function]
    fixtures: dict[str, Function]
    marks: set[str]


def _module(source: str) -> Module:
    tree = ast.parse(source)
    functions = {
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef | ast.AsyncFunctionDef))
    }
    marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            marks |= _marks([node.value])
    fixtures = {name: f for name, f in functions.items() if _is_fixture(f)}
    return Module(functions, fixtures, marks)


def _conftests(path: Path) -> list[Module]:
    """The ``conftest.py`` modules that serve ``path``, nearest first."""
    found = []
    folder = path.parent
    while folder == TESTS or TESTS in folder.parents:
        conftest = folder / "conftest.py"
        if conftest.exists():
            found.append(_module(conftest.read_text()))
        folder = folder.parent
    return found


def _what_starts(scopes: list[Module]) -> Iterator[tuple[str, set[str], set[str]]]:
    """Each test of ``scopes[0]`` (a test module; then its conftests, nearest first): its
    name, the markers it carries and those it should carry."""

    known: dict[int, set[str]] = {}

    def needs(function: Function, scope: int, seen: frozenset[int]) -> set[str]:
        if id(function) in known:
            return known[id(function)]
        if id(function) in seen:
            return set()
        seen = seen | {id(function)}
        starts = _starts(function)
        found = {mark for mark, on in zip(KINDS, starts.kinds, strict=True) if on}
        for name in starts.calls & scopes[scope].functions.keys():  # helpers of its module
            found |= needs(scopes[scope].functions[name], scope, seen)
        for name in starts.fixtures:
            # A fixture taking its own name (an override) gets the one of a farther scope.
            first = scope + 1 if name == function.name else scope
            for index in range(first, len(scopes)):
                if name in scopes[index].fixtures:
                    found |= needs(scopes[index].fixtures[name], index, seen)
                    break
        known[id(function)] = found
        return found

    module = scopes[0]
    for name, function in module.functions.items():
        if name.startswith("test_"):
            carried = (_marks(function.decorator_list) | module.marks) & set(KINDS)
            yield name, carried, needs(function, 0, frozenset())


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if p != Path(__file__).resolve())


@pytest.mark.parametrize("path", _test_files(), ids=lambda p: str(p.relative_to(TESTS)))
def test_markers_say_what_each_test_starts(path: Path) -> None:
    scopes = [_module(path.read_text()), *_conftests(path)]
    wrong = [
        f"{name}: marked {sorted(carried) or 'nothing'}, starts {sorted(needed) or 'nothing'}"
        for name, carried, needed in _what_starts(scopes)
        if carried != needed
    ]
    assert not wrong, "\n".join(wrong)


SAMPLE_CONFTEST = """
import pytest

@pytest.fixture
async def browser():
    async with async_playwright() as playwright:
        yield await playwright.chromium.launch()

@pytest.fixture
def settings():
    return 1
"""

SAMPLE = """
import pytest

pytestmark = pytest.mark.roles("api")

@pytest.fixture
async def proxied(settings):
    async with TcpProxy("127.0.0.1", 1) as proxy:
        yield proxy

@pytest.fixture
def settings(settings):
    return settings

def run_smoke(only):
    subprocess.run([sys.executable, "-m", "benchmarks", "--only", only])

async def test_over_a_proxy(proxied): ...

def test_smoke(): run_smoke("one-hop")

async def test_page(browser, settings): ...

@pytest.mark.servers
@pytest.mark.timeout(10)
def test_marked_and_starting_nothing(settings): ...

def test_plain(): ...
"""


def test_the_reading_follows_helpers_and_fixtures() -> None:
    found = {
        name: (carried, needed)
        for name, carried, needed in _what_starts([_module(SAMPLE), _module(SAMPLE_CONFTEST)])
    }
    assert found == {
        "test_over_a_proxy": (set(), {"servers"}),
        "test_smoke": (set(), {"harness"}),
        "test_page": (set(), {"browser"}),
        "test_marked_and_starting_nothing": ({"servers"}, set()),
        "test_plain": (set(), set()),
    }
