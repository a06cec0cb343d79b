"""The organisation cache: one query per batch of misses, unknown ids checked again soon."""

from __future__ import annotations

import asyncio

import pytest

from dispatcher.known_orgs import KnownOrganisations


class Store:
    """Organisations as a set, counting the queries asked of it."""

    def __init__(self, *ids: str) -> None:
        self.ids = set(ids)
        self.queries: list[list[str]] = []

    async def existing(self, ids: list[str]) -> set[str]:
        self.queries.append(ids)
        return self.ids & set(ids)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_lookups_at_the_same_moment_share_one_query() -> None:
    store = Store("org_a", "org_b")
    known = KnownOrganisations(store.existing)
    asked = ["org_a", "org_b", "acme", "org_a"] * 25
    answers = await asyncio.gather(*(known.exists(org) for org in asked))
    assert answers == [org != "acme" for org in asked]
    assert store.queries == [["acme", "org_a", "org_b"]]


async def test_known_ids_are_cached_and_unknown_ones_asked_again_after_a_few_seconds() -> None:
    store, clock = Store("org_a"), Clock()
    known = KnownOrganisations(store.existing, known_ttl=60, unknown_ttl=3, clock=clock)
    assert await known.exists("org_a") and not await known.exists("org_new")
    store.ids.add("org_new")  # created just after its first event was rejected
    clock.now += 2
    assert await known.exists("org_a") and not await known.exists("org_new")
    assert len(store.queries) == 2
    clock.now += 2
    assert await known.exists("org_new")
    assert await known.exists("org_a")
    assert len(store.queries) == 3
    clock.now += 60
    assert await known.exists("org_a")
    assert len(store.queries) == 4


async def test_a_failed_query_caches_nothing() -> None:
    store = Store("org_a")
    calls = 0

    async def flaky(ids: list[str]) -> set[str]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("database down")
        return await store.existing(ids)

    known = KnownOrganisations(flaky)
    with pytest.raises(ConnectionError):
        await known.exists("org_a")
    assert await known.exists("org_a")
