"""No regular expression of the input layer backtracks: every compiled pattern held by a module
of ``api`` or ``svc`` reads adversarial text of up to 64 KiB in bounded time.

The adversarial texts are long runs of each character the pattern names (and of a digit and a
letter), alone or after a minus, ended by a character that makes the match fail: the shape
that makes nested or overlapping repeats (``(a+)+``, ``0*[0-9]+``) try every split of the run.
Sizes grow from 1 KiB, so a pattern that backtracks fails at a small size, in milliseconds.

Patterns are timed anchored (``fullmatch``, ``match``), as the input layer uses them: an
unanchored ``search`` for any unbounded repeat is quadratic in the text by itself, which the
length caps of the fields bound.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Iterator

import pytest

PACKAGES = ("api", "svc")
SIZES = (8, 12, 16, 20, 24, 32, 256, 1024, 4096, 16_384, 65_536)
"""Small steps first: a pattern that backtracks exponentially fails by about 20 characters, one that
backtracks quadratically by a few KiB, each in well under a second."""
BUDGET = 0.05
"""Seconds one match of one text may take, at any size (a linear scan of 64 KiB takes ~1 ms)."""
ENDINGS = ("", "!", "\n", "a", "0")
PREFIXES = ("", "-")


def patterns() -> Iterator[tuple[str, re.Pattern[str]]]:
    """Every ``re.Pattern`` global of every module of the packages, named ``module.NAME``."""
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    yield f"{info.name}.{name}", value


def alphabet(pattern: re.Pattern[str]) -> list[str]:
    """The characters to repeat: those written in the pattern, a digit and a letter."""
    written = {c for c in pattern.pattern if c.isprintable() and not c.isspace()}
    return sorted(written | {"0", "1", "a"})


def slowest(pattern: re.Pattern[str], text: str) -> float:
    """The seconds of the slower of fullmatch and match on ``text`` (best of two)."""
    worst = 0.0
    for method in (pattern.fullmatch, pattern.match):
        best = float("inf")
        for _ in range(2):
            started = time.perf_counter()
            method(text)
            best = min(best, time.perf_counter() - started)
            if best < BUDGET:
                break
        worst = max(worst, best)
    return worst


FOUND = sorted(dict(patterns()).items())


def test_the_patterns_of_the_input_layer_are_found() -> None:
    names = {name for name, _ in FOUND}
    assert any(name.startswith("api.input.") for name in names)
    assert len(names) >= 10


def backtracking(pattern: re.Pattern[str]) -> str | None:
    """The first adversarial text ``pattern`` reads too slowly, described; None when none."""
    for size in SIZES:
        for char in alphabet(pattern):
            for prefix in PREFIXES:
                for ending in ENDINGS:
                    took = slowest(pattern, prefix + char * size + ending)
                    if took >= BUDGET:
                        text = f"{prefix!r} + {char!r} * {size} + {ending!r}"
                        return f"{took * 1000:.0f} ms on {text}"
    return None


@pytest.mark.parametrize("written", [r"-?0*([0-9]+)", r"(a+)+$", r"[0-9]*[0-9]+x", r"(\w+\s?)*$"])
def test_the_check_finds_nested_or_overlapping_repeats(written: str) -> None:
    assert backtracking(re.compile(written)) is not None


@pytest.mark.parametrize("written", [r"-?[0-9]+", r"[0-9]{1,9}", r"-?[0-9]*[.,][0-9]*"])
def test_the_check_passes_repeats_that_cannot_overlap(written: str) -> None:
    assert backtracking(re.compile(written)) is None


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("name", "pattern"), FOUND, ids=[name for name, _ in FOUND])
def test_a_pattern_reads_64_kib_of_adversarial_text_in_bounded_time(
    name: str, pattern: re.Pattern[str]
) -> None:
    slow = backtracking(pattern)
    assert slow is None, f"{name} ({pattern.pattern!r}) backtracks: {slow}"
