"""Role processes settle the garbage collector once started: start-up objects frozen, young
collections rare (deliveries' objects are freed by reference counting)."""

from __future__ import annotations

import gc

from cli.main import YOUNG_COLLECTION_AFTER, settle_collector, young_collection_after
from svc.settings import Settings


def test_settling_freezes_start_up_objects_and_collects_the_young_less_often() -> None:
    before = gc.get_threshold()
    try:
        settle_collector()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_COLLECTION_AFTER, *before[1:])
        assert YOUNG_COLLECTION_AFTER > 10 * before[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_the_young_threshold_grows_with_the_dispatcher_budget() -> None:
    assert young_collection_after(Settings()) == YOUNG_COLLECTION_AFTER
    assert young_collection_after(Settings(dispatcher_concurrency=200)) == YOUNG_COLLECTION_AFTER
    assert young_collection_after(Settings(dispatcher_concurrency=5000)) == 500_000
    before = gc.get_threshold()
    try:
        settle_collector(500_000)
        assert gc.get_threshold()[0] == 500_000
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
