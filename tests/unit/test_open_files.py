"""A dispatcher raises its open-file limit to what its connections need."""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

from dispatcher.service import OTHER_FILES, ensure_open_files, open_files_needed
from svc.settings import Settings


@pytest.fixture
def limit() -> Iterator[tuple[int, int]]:
    """The process's open-file limits, set back afterwards."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield before
    resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_the_need_counts_every_connection() -> None:
    settings = Settings.from_env({"SVC_DISPATCHER_CONCURRENCY": "3000"})
    assert open_files_needed(settings) == 3000 + settings.database_pool_size + OTHER_FILES


def test_a_low_soft_limit_is_raised_to_the_need(limit: tuple[int, int]) -> None:
    _, hard = limit
    need = 900 if hard == resource.RLIM_INFINITY else min(900, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (need // 2, hard))
    assert ensure_open_files(need) == need
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == need


def test_the_hard_limit_bounds_it_with_a_warning(
    limit: tuple[int, int], caplog: pytest.LogCaptureFixture
) -> None:
    soft, hard = limit
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard // 2, hard))
    assert ensure_open_files(hard + 1) == hard
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
    assert "open files are limited" in caplog.text


def test_a_high_enough_limit_is_left_alone(limit: tuple[int, int]) -> None:
    soft, _ = limit
    assert ensure_open_files(10) == soft
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == limit
