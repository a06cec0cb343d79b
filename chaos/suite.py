"""The whole run: private servers, a migrated database, role pods, receivers and one shop per
scenario, a warm-up, then each fault in turn with its verdict. Everything started here is
stopped and every temporary folder removed on the way out, whatever happened."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from chaos import records, scenario
from chaos.faults import (
    CLUSTER,
    NODE,
    PLAIN,
    POSTGRESQL,
    PROXIED,
    RABBITMQ,
    STANDBY,
    Fault,
    Receivers,
    World,
)
from chaos.logs import LogMarks
from chaos.scenario import Shop, Timing, arrived, wait_until
from chaos.verdict import Verdict, duplicates, judge, percent
from harness.database import create_migrated
from harness.load import TRIES, Load
from harness.processes import ROLES, Pods, die_with_parent, svc
from harness.servers.postgres import private_postgres, private_postgres_pair
from harness.servers.proxy import TcpProxy
from harness.servers.rabbitmq import private_rabbit_cluster, private_rabbitmq
from harness.servers.redis import PrivateRedis
from svc.crypto import new_key_text

log = logging.getLogger(__name__)

RETRY_LADDER = "1s,2s,5s..2m"
RESCUE_AFTER = "10s"
"""Retries lost in the broker are queued again this long after they were due (a scenario
settles within 45 s; production waits 5 minutes)."""
DATABASE = "svc"


class SuiteError(RuntimeError):
    """The run could not be set up: nothing was measured."""


@dataclass(frozen=True, slots=True)
class Options:
    timing: Timing
    faults: list[Fault]
    smoke: bool = False
    healthy_receivers: int = 3
    retry_ladder: str = RETRY_LADDER


@dataclass
class Run:
    """One run of the suite: its set-up, then one verdict per scenario."""

    options: Options
    env: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d"))

    def summary(self) -> dict[str, Any]:
        timing = self.options.timing
        return {
            "date": self.date,
            "smoke": self.options.smoke,
            "duration_s": round(time.monotonic() - self.started, 1),
            "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
            "versions": self.versions,
            "settings": {
                "rate_per_s": timing.rate,
                "load_before_fault_s": timing.lead,
                "load_after_fault_s": timing.after,
                "settle_deadline_s": timing.settle,
                "healthy_receivers": self.options.healthy_receivers,
                "flaky_down_s": timing.flaky_down,
                "retry_ladder": self.options.retry_ladder,
                "client_tries": TRIES,
            },
            "passed": all(v.passed for v in self.verdicts),
        }


async def _command(*command: str, env: dict[str, str] | None = None) -> str:
    """Run ``command``; its stdout, or SuiteError with its stderr."""
    process = await asyncio.create_subprocess_exec(
        *command,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=die_with_parent,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    if process.returncode != 0:
        raise SuiteError(f"{' '.join(command)} failed: {err.decode()[-2000:]}")
    return out.decode()


async def _shop(run: Run, api_url: str, receivers: Receivers, name: str) -> Shop:
    """A test key of a new organisation, and its endpoint on every receiver."""
    command = svc("keys", "create", "--env", "test", "--org", f"chaos-{name}", "--json")
    made = orjson.loads(await _command(*command, env=run.env))
    endpoints: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {made['key']}"}
    async with aiohttp.ClientSession(api_url, headers=headers) as session:
        for receiver in receivers.all:
            body = {"url": receiver.url(f"/{name}"), "events": ["payment.created"]}
            async with session.post("/v1/webhook_endpoints", json=body) as answer:
                if answer.status != 201:
                    raise SuiteError(f"endpoint not created: {answer.status} {await answer.text()}")
                endpoint = await answer.json()
            receiver.add(f"/{name}", endpoint["secret"])
            endpoints[receiver.name] = endpoint["id"]
    return Shop(name, made["organisation_id"], made["key"], endpoints)


async def _warm_up(world: World, shop: Shop, api_url: str, rate: float) -> None:
    """A few seconds of payments, every one delivered everywhere, before measuring."""
    load = Load(api_url, shop.key, rate, "warmup")
    stop = asyncio.Event()
    sending = asyncio.create_task(load.run(stop, 20))
    await asyncio.sleep(2)
    stop.set()
    await sending
    made = {r.payment_id for r in load.requests if r.payment_id}
    if len(made) < len(load.requests):
        raise SuiteError(f"warm-up: {len(made)} of {len(load.requests)} payments accepted")
    receivers = world.receivers.all
    if not await wait_until(lambda: arrived(receivers, shop.path, made), time.monotonic() + 30):
        raise SuiteError("warm-up: not every payment's event reached every endpoint in 30 s")


async def _versions(world: World) -> dict[str, str]:
    redis = await _command("redis-server", "--version")
    rabbitmq = await world.rabbitmq.ctl("version")
    return {
        "rabbitmq": rabbitmq.strip(),
        "postgresql": world.postgres.version(),
        "redis": next((w[2:] for w in redis.split() if w.startswith("v=")), redis.strip()),
        "python": platform.python_version(),
    }


async def play(run: Run, world: World, fault: Fault, shop: Shop, api_url: str) -> Verdict:
    """Run ``fault`` under load for ``shop`` and judge what arrived."""
    timing = run.options.timing
    pods = world.pods
    deaths = {role: len(pods[role].deaths) for role in ROLES}
    kills = {role: pods[role].kills for role in ROLES}
    marks = LogMarks({role: pods[role].log_path for role in ROLES})
    world.notes.clear()
    world.checks.clear()
    seen = await scenario.run(world, fault, shop, api_url, timing)
    receivers = world.receivers.all
    accepted = {r.payment_id for r in seen.requests if r.payment_id is not None}
    await wait_until(lambda: arrived(receivers, shop.path, accepted), seen.deadline)
    keys = [r.key for r in seen.requests]
    patience = max(10.0, seen.deadline - time.monotonic())
    found = await records.read_when_up(
        run.env["SVC_DATABASE_URL"], run.env["SVC_SECRET_KEY"], shop.org, keys, patience
    )
    everything = accepted | found.payments
    await wait_until(lambda: arrived(receivers, shop.path, everything), seen.deadline)
    seen.ended = time.monotonic()
    verdict = judge(seen, found, receivers, [r.name for r in world.receivers.healthy])
    if run.options.smoke:
        verdict.duplicate_limit = None  # too few deliveries to measure the share against it
    verdict.notes = dict(world.notes)
    verdict.checks = dict(world.checks)
    verdict.not_ready_after = await pods.wait_ready(timing.ready_within)
    verdict.role_deaths = {role: len(pods[role].deaths) - deaths[role] for role in ROLES}
    verdict.unexpected_deaths = {
        role: verdict.role_deaths[role] - (pods[role].kills - kills[role]) for role in ROLES
    }
    verdict.recovered = (
        verdict.recover_s is not None
        and None not in verdict.stop_recover_s
        and verdict.lost == 0
        and not verdict.not_ready_after
    )
    verdict.log_lines = marks.warnings()
    if verdict.lost_samples:
        ids = [e for sample in verdict.lost_samples for e in sample["event_ids"]]
        found_attempts = await records.attempts(run.env["SVC_DATABASE_URL"], ids)
        names = {endpoint: name for name, endpoint in shop.endpoints.items()}
        for sample in verdict.lost_samples:
            sample["attempts"] = [
                {**a, "endpoint": names.get(str(a.get("endpoint_id")), a.get("endpoint_id"))}
                for e in sample["event_ids"]
                for a in found_attempts.get(e, [])
            ]
    log.info(
        "%s: accepted %d, lost %d, duplicates %d (%s), double payments %d, recover %s s",
        fault.name,
        verdict.accepted,
        verdict.lost,
        verdict.duplicates,
        percent(verdict.duplicate_share),
        verdict.double_payments,
        verdict.recover_s,
    )
    return verdict


def _environment(
    run: Run, amqp: str, redis: str, database: str, queue_type: str = "classic"
) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    return {
        **inherited,
        "SVC_AMQP_URL": amqp,
        "SVC_QUEUE_TYPE": queue_type,
        "SVC_REDIS_URL": redis,
        "SVC_DATABASE_URL": database,
        "SVC_SECRET_KEY": new_key_text("chaos"),
        "SVC_NAMESPACE": f"chaos{os.getpid()}",
        "SVC_RETRY_LADDER": run.options.retry_ladder,
        "SVC_RETRY_RESCUE_AFTER": RESCUE_AFTER,
        "SVC_ALLOW_PRIVATE_TARGETS": "true",
        "SVC_HTTP_HOST": "127.0.0.1",
        "SVC_SHUTDOWN_GRACE": "5s",
        "SVC_LOG_LEVEL": "INFO",
        "SVC_RATE_LIMIT_LIVE": "0",  # the steady load must not be throttled
        "SVC_RATE_LIMIT_TEST": "0",
        "PYTHONUNBUFFERED": "1",
    }


def _tail(path: Path, lines: int = 20) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


@asynccontextmanager
async def world_of(run: Run, broker: str = NODE, setup: str = PLAIN) -> AsyncIterator[World]:
    """Private servers, a migrated database, receivers and ready role pods for ``run``, the
    roles on one RabbitMQ node or (``CLUSTER``) on a three-node cluster with quorum queues,
    and reaching PostgreSQL and RabbitMQ as ``setup`` says (see ``chaos.faults.PLAIN``);
    everything stopped and every temporary folder removed on the way out."""
    options = run.options
    async with AsyncExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="svc-chaos-"))
        stack.callback(shutil.rmtree, workdir, True)
        logdir = workdir / "logs"
        logdir.mkdir()
        cluster = None
        if broker == CLUSTER:
            cluster = await stack.enter_async_context(private_rabbit_cluster())
            rabbitmq, amqp_url, queue_type = cluster.nodes[0], cluster.url, "quorum"
        else:
            rabbitmq = await stack.enter_async_context(private_rabbitmq())
            amqp_url, queue_type = rabbitmq.url, "classic"
        pair = None
        if setup == STANDBY:
            pair = stack.enter_context(private_postgres_pair())
            postgres = pair.primary
        else:
            postgres = stack.enter_context(private_postgres())
        redis = PrivateRedis()
        stack.push_async_callback(redis.stop)
        await redis.start()
        database = await create_migrated(postgres.admin_url, DATABASE)
        if pair is not None:
            database = pair.url(DATABASE)
        proxies: dict[str, TcpProxy] = {}
        if setup == PROXIED:
            for link, port in ((POSTGRESQL, postgres.port), (RABBITMQ, rabbitmq.port)):
                proxies[link] = await stack.enter_async_context(TcpProxy("127.0.0.1", port))
            database = database.replace(f":{postgres.port}/", f":{proxies[POSTGRESQL].port}/")
            amqp_url = amqp_url.replace(f":{rabbitmq.port}/", f":{proxies[RABBITMQ].port}/")
        run.env = _environment(run, amqp_url, redis.url, database, queue_type)
        receivers = Receivers(options.healthy_receivers)
        stack.push_async_callback(receivers.stop)
        await receivers.start()
        pods = Pods(run.env, logdir)
        stack.push_async_callback(pods.stop)
        pods.start()
        if waiting := await pods.wait_ready(90):
            tails = "".join(f"\n--- {r}:\n{_tail(pods[r].log_path)}" for r in waiting)
            raise SuiteError(f"roles never ready: {', '.join(waiting)}{tails}")
        world = World(
            pods, rabbitmq, postgres, redis, receivers, cluster, pair=pair, proxies=proxies
        )
        run.versions = await _versions(world)
        yield world


async def shops_of(run: Run, world: World, names: list[str]) -> list[Shop]:
    """One shop per name, the first warmed up: its payments all delivered everywhere."""
    api_url = world.pods["api"].url
    shops = await asyncio.gather(*(_shop(run, api_url, world.receivers, n) for n in names))
    await _warm_up(world, shops[0], api_url, run.options.timing.rate)
    return list(shops)


async def run_suite(options: Options) -> Run:
    """Set up, run every fault of ``options`` in turn, tear everything down. The faults of a
    RabbitMQ cluster run in a world of their own, set up after the others are done; so do
    those of a PostgreSQL standby and those of slow links (see ``chaos.faults.PLAIN``)."""
    run = Run(options)
    for (broker, setup), group in groupby(options.faults, lambda f: (f.broker, f.setup)):
        faults = list(group)
        async with world_of(run, broker, setup) as world:
            api_url = world.pods["api"].url
            shops = await shops_of(run, world, ["warmup", *(f.name for f in faults)])
            log.info(
                "warmed up on a RabbitMQ %s (%s); %d scenarios follow", broker, setup, len(faults)
            )
            verdicts = []
            for fault, shop in zip(faults, shops[1:], strict=True):
                verdicts.append(await play(run, world, fault, shop, api_url))
            await asyncio.sleep(1)  # late duplicates of the last scenario still count
            for verdict, shop in zip(verdicts, shops[1:], strict=True):
                got = [r.endpoints[shop.path].receipts for r in world.receivers.all]
                recount = sum(duplicates(receipts) for receipts in got)
                run.verdicts.append(replace(verdict, duplicates=recount))
    return run


def command(
    parser: argparse.ArgumentParser, work: Callable[[Any], Coroutine[Any, Any, int]]
) -> int:
    """A fault-suite command: its arguments parsed, its log on stderr, ``work(args)`` run to
    its exit status."""
    args = parser.parse_args()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
    return asyncio.run(work(args))


async def guarded(work: Awaitable[int], deadline: float) -> int:
    """``work``'s exit status, or 2 when the run itself failed, 3 when it overran ``deadline``
    seconds, 130 when a signal interrupted it; everything it started is stopped either way."""
    main = asyncio.current_task()
    assert main is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, main.cancel)
    try:
        async with asyncio.timeout(deadline):
            return await work
    except TimeoutError:
        log.error("the run overran its %.0f s deadline; everything was stopped", deadline)
        return 3
    except asyncio.CancelledError:
        log.error("interrupted; everything was stopped")
        return 130
    except SuiteError as exc:
        log.error("%s", exc)
        return 2
