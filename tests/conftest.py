"""Shared fixtures: real PostgreSQL, RabbitMQ and Redis, a unique namespace and database per
test, real receivers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest
from playwright.async_api import Browser, async_playwright
from redis.asyncio import Redis

from harness.cleanup import delete_namespace
from harness.database import LOCAL_ADMIN_URL
from harness.ports import free_port, wait_ready
from harness.receivers import Receiver
from svc.context import Context, open_context
from svc.crypto import new_key_text
from svc.ladder import RetryLadder
from svc.settings import Settings
from tests.databases import Databases

LOCAL_AMQP = "amqp://guest:guest@127.0.0.1:5672/"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"


def _reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 0), 2):
            return True
    except OSError:
        return False


def _docker_available() -> bool:
    return os.path.exists("/var/run/docker.sock")


@pytest.fixture(scope="session")
def service_urls() -> Iterator[tuple[str, str]]:
    """AMQP and Redis URLs: from SVC_TEST_*, else the local services, else testcontainers."""
    amqp_url = os.environ.get("SVC_TEST_AMQP_URL", LOCAL_AMQP)
    redis_url = os.environ.get("SVC_TEST_REDIS_URL", LOCAL_REDIS)
    if _reachable(amqp_url) and _reachable(redis_url):
        yield amqp_url, redis_url
        return
    if _docker_available():
        from testcontainers.rabbitmq import RabbitMqContainer
        from testcontainers.redis import RedisContainer

        with RabbitMqContainer("rabbitmq:3.13-alpine") as rabbit, RedisContainer() as redis:
            amqp = (
                f"amqp://guest:guest@{rabbit.get_container_host_ip()}:"
                f"{rabbit.get_exposed_port(5672)}/"
            )
            red = f"redis://{redis.get_container_host_ip()}:{redis.get_exposed_port(6379)}/0"
            yield amqp, red
        return
    message = f"RabbitMQ ({amqp_url}) or Redis ({redis_url}) unreachable and no Docker"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def databases() -> Iterator[Databases]:
    """PostgreSQL of this run (``SVC_TEST_DATABASE_URL``, a role that may create databases,
    else the local server): a migrated template, and one database per test made from it."""
    admin_url = os.environ.get("SVC_TEST_DATABASE_URL", LOCAL_ADMIN_URL)
    if not _reachable(admin_url):
        message = f"PostgreSQL ({admin_url}) unreachable"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    made = Databases(admin_url)
    asyncio.run(made.make_template())
    try:
        yield made
    finally:
        asyncio.run(made.drop_all())


@pytest.fixture
async def database_url(databases: Databases) -> AsyncIterator[str]:
    """A migrated database of this test alone."""
    url = await databases.create()
    yield url
    databases.drop(url)


SECRET_KEY = new_key_text("test")


@pytest.fixture
async def settings(
    service_urls: tuple[str, str], database_url: str, request: pytest.FixtureRequest
) -> AsyncIterator[Settings]:
    """Settings in a fresh namespace and database with a short ladder and fast timers; the
    namespace's queues, exchange and Redis keys are deleted after the test, whatever used it.

    A test changes some with ``@pytest.mark.settings(name=value, ...)``.
    """
    amqp_url, redis_url = service_urls
    marker = request.node.get_closest_marker("settings")
    changes = dict(marker.kwargs) if marker else {}
    if isinstance(changes.get("retry_ladder"), str):
        changes["retry_ladder"] = RetryLadder.parse(changes["retry_ladder"])
    base = Settings(
        amqp_url=amqp_url,
        redis_url=redis_url,
        database_url=database_url,
        database_pool_size=5,
        secret_key=SECRET_KEY,
        http_host="127.0.0.1",
        http_port=free_port(),
        ops_port=free_port(),
        namespace=f"t{uuid.uuid4().hex[:12]}",
        retry_ladder=RetryLadder.parse("1s,2s..6s"),
        allow_private_targets=True,
        delivery_timeout=2.0,
        defer_delay=0.5,
        endpoint_cache_ttl=0.2,
        outbox_sweep_interval=0.5,
        outbox_sweep_age=1.0,
        queue_stats_interval=0.5,
        shutdown_grace=5.0,
        rate_limit_live=0,  # tests that count requests set their limits themselves
        rate_limit_test=0,
    )
    made = replace(base, **changes)
    yield made
    await delete_namespace(made)


@pytest.fixture
async def ctx(settings: Settings) -> AsyncIterator[Context]:
    async with open_context(settings) as context:
        yield context


class Running:
    """A whole service (api, scheduler, dispatcher) running in this process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.http_port}"

    @property
    def ops_url(self) -> str:
        """Where ``/health``, ``/ready`` and ``/metrics`` are served (never the public port)."""
        return f"http://127.0.0.1:{self.settings.ops_port}"

    async def start(self, roles: tuple[str, ...] = ("api", "scheduler", "dispatcher")) -> None:
        from cli.main import serve_roles

        self.task = asyncio.create_task(serve_roles(self.settings, roles, self.stop))
        await wait_ready(self.ops_url + "/ready", self.task)

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, 30)


@pytest.fixture
async def service(
    settings: Settings, ctx: Context, request: pytest.FixtureRequest
) -> AsyncIterator[Running]:
    """The service in this process; ``@pytest.mark.roles("api", ...)`` picks fewer roles."""
    marker = request.node.get_closest_marker("roles")
    running = Running(settings)
    await running.start(*([tuple(marker.args)] if marker else []))
    try:
        yield running
    finally:
        await running.close()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with Receiver() as running:
        yield running


class Api:
    """An HTTP client for the running service, authenticated with one key; ``ops_url`` is the
    service's ops port (``/ready``, ``/metrics``), for tests that read them."""

    def __init__(self, session: object, key: str, ops_url: str = "") -> None:
        import aiohttp

        assert isinstance(session, aiohttp.ClientSession)
        self.session = session
        self.key = key
        self.headers = {"Authorization": f"Bearer {key}"}
        self.ops_url = ops_url

    async def call(self, method: str, path: str, **kwargs: object) -> tuple[int, object]:
        headers = {**self.headers, **kwargs.pop("headers", {})}  # type: ignore[dict-item]
        async with self.session.request(method, path, headers=headers, **kwargs) as response:  # type: ignore[arg-type]
            body = await response.json(content_type=None)
            return response.status, body

    async def endpoint(self, url: str, events: list[str]) -> dict[str, object]:
        status, body = await self.call(
            "POST", "/v1/webhook_endpoints", json={"url": url, "events": events}
        )
        assert status == 201, body
        assert isinstance(body, dict)
        return body


@contextlib.asynccontextmanager
async def running_api(
    settings: Settings, org: str, roles: tuple[str, ...] = ("api", "scheduler", "dispatcher")
) -> AsyncIterator[tuple[Context, Api]]:
    """The service on ``settings`` (a private server's URL, say) and a test key of ``org``."""
    import aiohttp

    running = Running(settings)
    await running.start(roles)
    try:
        async with (
            open_context(settings) as context,
            aiohttp.ClientSession(base_url=running.base_url) as session,
        ):
            key, _ = await context.api_keys.create("test", org)
            yield context, Api(session, key, running.ops_url)
    finally:
        await running.close()


@pytest.fixture
async def make_api(service: Running, ctx: Context) -> AsyncIterator[object]:
    """``await make_api(env="test", org="acme")`` gives an Api with a fresh key."""
    import aiohttp

    sessions: list[aiohttp.ClientSession] = []

    async def make(env: str = "test", org: str = "acme") -> Api:
        key, _ = await ctx.api_keys.create(env, org)
        session = aiohttp.ClientSession(base_url=service.base_url)
        sessions.append(session)
        return Api(session, key, service.ops_url)

    yield make
    for session in sessions:
        await session.close()


@pytest.fixture
async def api(make_api: object) -> Api:
    return await make_api()  # type: ignore[operator, no-any-return]


@pytest.fixture
async def notices(ctx: Context) -> AsyncIterator[asyncio.Queue[Any]]:
    """Endpoint change notices as dispatchers receive them, decoded."""
    received: asyncio.Queue[Any] = asyncio.Queue()
    redis: Redis = Redis.from_url(ctx.settings.redis_url)
    pubsub = redis.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(ctx.keys.endpoint_changes)

    async def listen() -> None:
        async for message in pubsub.listen():
            await received.put(orjson.loads(message["data"]))

    task = asyncio.create_task(listen())
    yield received
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await pubsub.aclose()  # type: ignore[no-untyped-call]
    await redis.aclose()


CHROMIUM = Path("/usr/bin/chromium")
"""Debian's Chromium (``make test`` installs it); never a browser Playwright downloads."""


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (make test does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture
async def browser(chromium: Path) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(chromium))
        try:
            yield launched
        finally:
            await launched.close()
