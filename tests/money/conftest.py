"""Fixtures of the money tests: payouts only on request unless a test says otherwise."""

from __future__ import annotations

from dataclasses import replace

import pytest

from svc.settings import Settings


@pytest.fixture
def settings(settings: Settings, request: pytest.FixtureRequest) -> Settings:
    """No payout timer (a test run crossing midnight UTC would pay balances out), unless the
    test's ``@pytest.mark.settings`` names a ``payout_schedule``."""
    marker = request.node.get_closest_marker("settings")
    if marker is not None and "payout_schedule" in marker.kwargs:
        return settings
    return replace(settings, payout_schedule="manual")
