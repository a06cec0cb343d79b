"""Per-endpoint windows: healthy endpoints ramp up to the cap, hanging ones stay small."""

from __future__ import annotations

import asyncio

from dispatcher.gate import INITIAL_WINDOW, MIN_WINDOW, EndpointGate


async def test_window_grows_with_answers_up_to_the_cap() -> None:
    gate = EndpointGate(cap=20, wait=0.05)
    assert await gate.acquire("we_a")  # busy throughout: an idle endpoint starts afresh
    for _ in range(30):
        assert await gate.acquire("we_a")
        gate.release("we_a", answered=True)
    assert await gate.acquire("we_a")
    assert gate.window("we_a") == 20


async def test_unanswered_requests_halve_the_window_to_the_floor() -> None:
    gate = EndpointGate(cap=100, wait=0.05)
    assert await gate.acquire("we_a")  # keeps the endpoint's state alive
    for _ in range(40):
        assert await gate.acquire("we_a")
        gate.release("we_a", answered=True)
    assert gate.window("we_a") == INITIAL_WINDOW + 40
    for _ in range(5):
        assert await gate.acquire("we_a")
        gate.release("we_a", answered=False)
    assert gate.window("we_a") == MIN_WINDOW


async def test_hanging_endpoint_holds_only_the_initial_window() -> None:
    gate = EndpointGate(cap=100, wait=0.05)
    taken = [await gate.acquire("we_hang") for _ in range(INITIAL_WINDOW)]
    assert all(taken)
    assert not await gate.acquire("we_hang"), "no answer within the wait: defer"
    await asyncio.sleep(0.06)
    assert not await gate.acquire("we_hang"), "still nothing finished: defer at once"
    assert await gate.acquire("we_healthy"), "other endpoints are unaffected"
    assert gate.in_flight("we_hang") == INITIAL_WINDOW


async def test_a_waiting_job_gets_the_next_free_slot() -> None:
    gate = EndpointGate(cap=1, wait=1.0)
    assert await gate.acquire("we_a")
    waiting = asyncio.create_task(gate.acquire("we_a"))
    await asyncio.sleep(0.01)
    gate.release("we_a", answered=True)
    assert await waiting
    assert gate.in_flight("we_a") == 1


async def test_a_slot_given_back_unsent_leaves_the_window_and_wakes_a_waiter() -> None:
    gate = EndpointGate(cap=100, wait=1.0)
    taken = [await gate.acquire("we_a") for _ in range(INITIAL_WINDOW)]
    assert all(taken)
    waiting = asyncio.create_task(gate.acquire("we_a"))
    await asyncio.sleep(0.01)
    gate.release("we_a", answered=None)  # deferred by its rate limit: nothing was sent
    assert await waiting
    assert gate.window("we_a") == INITIAL_WINDOW
