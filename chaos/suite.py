"""The whole run: private servers, role pods, receivers and a shop per scenario, a warm-up,
then each fault in turn under steady load and its verdict."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import platform
import shutil
import signal
import tempfile
import time
from asyncio.subprocess import PIPE
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_fixed

from chaos import faults
from chaos.faults import Fault, Receivers, World
from chaos.verdict import Observed, Records, Shop, Verdict, answer_checks, duplicates, judge
from harness.database import create_migrated
from harness.load import BODY, CONTENT_TYPE, PATH, Load
from harness.ports import cancel, wait_until
from harness.processes import ROLES, Pods, die_with_parent, svc
from harness.receivers import Receiver
from harness.servers.postgres import private_postgres, private_postgres_pair
from harness.servers.proxy import TcpProxy
from harness.servers.rabbitmq import private_rabbit_cluster, private_rabbitmq
from harness.servers.redis import PrivateRedis
from svc.crypto import SecretBox, new_key_text
from svc.db import open_database
from svc.errors import IdempotencyError, Unavailable
from svc.idempotency import Idempotency, fingerprint
from svc.keys.store import ApiKeys
from svc.orgs import Scope
from svc.orgs.store import Organisations

log = logging.getLogger(__name__)

RETRY_LADDER = "1s,2s,5s..2m"
HEALTHY_RECEIVERS = 3
RESCUE_AFTER = "10s"
"""Retries lost in the broker are queued again this long after they were due, within a scenario."""
DATABASE = "svc"


@dataclass(frozen=True, slots=True)
class Timing:
    """The load's rate, and in seconds: load before the fault (``lead``) and after it (``after``;
    ``min_load`` in all at least), the flaky endpoint's 503s (``flaky_down``), then the time
    events have to arrive (``settle``; later is lost) and retries to finish (``finish_within``)."""

    rate: float
    lead: float
    after: float
    min_load: float
    flaky_down: float
    settle: float
    finish_within: float
    ready_within: float = 60.0


FULL = Timing(rate=50, lead=8, after=20, min_load=35, flaky_down=30, settle=45, finish_within=40)
SMOKE = Timing(rate=50, lead=1.5, after=2.5, min_load=4, flaky_down=2, settle=20, finish_within=15)


class SuiteError(RuntimeError):
    """The run could not be set up: nothing was measured."""


@dataclass
class Run:
    """One run of the suite: what it plays, its set-up, then one verdict per scenario."""

    timing: Timing
    faults: list[Fault]
    smoke: bool = False
    env: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d"))

    def summary(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "smoke": self.smoke,
            "duration_s": round(time.monotonic() - self.started, 1),
            "machine": {"cores": os.cpu_count(), "platform": platform.platform()},
            "versions": self.versions,
            "settings": {
                "rate_per_s": self.timing.rate,
                "healthy_receivers": HEALTHY_RECEIVERS,
                "flaky_down_s": self.timing.flaky_down,
                "retry_ladder": RETRY_LADDER,
            },
            "passed": all(v.passed for v in self.verdicts),
            "scenarios": [asdict(v) for v in self.verdicts],
        }


async def _command(*command: str, env: dict[str, str] | None = None) -> str:
    """Run ``command``; its stdout, or SuiteError with its stderr."""
    process = await asyncio.create_subprocess_exec(
        *command, env=env, stdout=PIPE, stderr=PIPE, preexec_fn=die_with_parent
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    if process.returncode != 0:
        raise SuiteError(f"{' '.join(command)} failed: {err.decode()[-2000:]}")
    return out.decode()


async def _shop(run: Run, world: World, name: str) -> Shop:
    """A test key of a new organisation, and its endpoint on every receiver."""
    command = svc("keys", "create", "--env", "test", "--org", f"chaos-{name}", "--json")
    made = orjson.loads(await _command(*command, env=run.env))
    headers = {"Authorization": f"Bearer {made['key']}"}
    async with aiohttp.ClientSession(world.pods["api"].url, headers=headers) as session:
        for receiver in world.receivers.all:
            body = {"url": receiver.url(f"/{name}"), "events": ["payment.created"]}
            async with session.post("/v1/webhook_endpoints", json=body) as answer:
                if answer.status != 201:
                    raise SuiteError(f"endpoint not created: {answer.status} {await answer.text()}")
                receiver.add(f"/{name}", (await answer.json())["secret"])
    return Shop(name, made["organisation_id"], made["key"])


async def shops_of(run: Run, world: World, names: list[str]) -> list[Shop]:
    """One shop per name, the first warmed up: a few seconds of its payments, every one
    delivered everywhere, before measuring."""
    shops = await asyncio.gather(*(_shop(run, world, name) for name in names))
    load = Load(world.pods["api"].url, shops[0].key, run.timing.rate, "warmup")
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(2, stop.set)
    await load.run(stop, 20)
    made = {r.payment_id for r in load.requests if r.payment_id}
    if len(made) < len(load.requests):
        raise SuiteError(f"warm-up: {len(made)} of {len(load.requests)} payments accepted")
    if not await wait_until(lambda: arrived(world.receivers.all, shops[0].path, made), 30):
        raise SuiteError("warm-up: not every payment's event reached every endpoint in 30 s")
    return list(shops)


async def _read(env: dict[str, str], org: str, keys: list[str]) -> Records:
    found = Records()
    scope = Scope(org, "test")
    async with open_database(env["SVC_DATABASE_URL"], 2, wait=30) as db:
        idempotency = Idempotency(db, SecretBox.parse(env["SVC_SECRET_KEY"]), ttl_s=86400)
        (shop_key,), _ = await ApiKeys(db, Organisations(db)).page(scope, 1, None)  # its one key
        fp = fingerprint("POST", PATH, CONTENT_TYPE, BODY)
        for key in keys:
            with contextlib.suppress(IdempotencyError):
                stored = await idempotency.find(scope, shop_key, key, fp)
                if stored is not None:
                    found.bound[key] = str(orjson.loads(stored.body)["id"])
        rows = await db.fetch("SELECT id FROM payments WHERE org_id = $1", org)
        found.payments = {row["id"] for row in rows}
        rows = await db.fetch(
            "SELECT body FROM events WHERE org_id = $1 AND type = 'payment.created'", org
        )
    events = Counter(orjson.loads(bytes(row["body"]))["data"]["id"] for row in rows)
    found.doubled_events = sum(1 for n in events.values() if n > 1)
    return found


async def _records(env: dict[str, str], org: str, keys: list[str], patience: float) -> Records:
    """What the database holds for ``org`` and its idempotency ``keys``, read again while
    PostgreSQL is unavailable, for up to ``patience`` seconds."""
    down, stop = retry_if_exception_type((Unavailable, OSError)), stop_after_delay(patience)
    again = AsyncRetrying(retry=down, stop=stop, wait=wait_fixed(1), reraise=True)
    return await again(_read, env, org, keys)


def arrived(receivers: list[Receiver], path: str, payments: set[str]) -> bool:
    """Whether every receiver took the event of each of ``payments`` at ``path``."""
    return all(payments <= {x.payment_id for x in r.endpoints[path].receipts} for r in receivers)


async def _scenario(world: World, fault: Fault, shop: Shop, timing: Timing) -> Observed:
    """Run ``fault`` under load for ``shop``; returns once the load has finished."""
    if not_ready := await world.pods.wait_ready(timing.ready_within):
        log.warning("%s: not ready before the scenario: %s", fault.name, ", ".join(not_ready))
    load = Load(world.pods["api"].url, shop.key, timing.rate, fault.name)
    seen = Observed(fault, shop, time.monotonic(), load.requests)
    failing = world.receivers.flaky.failing
    failing.add(shop.path)
    healing = asyncio.get_running_loop().call_later(timing.flaky_down, failing.discard, shop.path)
    stop = asyncio.Event()
    sending = asyncio.create_task(load.run(stop, timing.finish_within))
    try:
        await asyncio.sleep(timing.lead)
        seen.fault_start = time.monotonic()
        log.info("%s: injecting %s", fault.name, fault.title)
        world.stops.clear()
        try:
            await fault.inject(world)
            await asyncio.sleep(fault.down)
        finally:
            if fault.heal is not None:  # also when injecting failed
                await fault.heal(world)
        seen.fault_end = time.monotonic()
        seen.stops = list(world.stops)
        end = max(seen.fault_end + timing.after, seen.started + timing.min_load)
        await asyncio.sleep(end - time.monotonic())
        stop.set()
        seen.deadline = time.monotonic() + timing.settle
        await sending
    finally:
        stop.set()
        healing.cancel()
        failing.discard(shop.path)
        await cancel(sending)  # done by now unless the scenario failed early
        await world.receivers.start()  # up again even if healing failed
    return seen


async def play(run: Run, world: World, fault: Fault, shop: Shop) -> Verdict:
    """Run ``fault`` under load for ``shop`` and judge what arrived."""
    pods = world.pods
    deaths = {role: len(pods[role].deaths) for role in ROLES}
    kills = {role: pods[role].kills for role in ROLES}
    world.checks.clear()
    seen = await _scenario(world, fault, shop, run.timing)
    receivers = world.receivers.all
    accepted = {r.payment_id for r in seen.requests if r.payment_id is not None}
    await wait_until(lambda: arrived(receivers, shop.path, accepted), seen.left())
    keys = [r.key for r in seen.requests]
    found = await _records(run.env, shop.org, keys, max(10.0, seen.deadline - time.monotonic()))
    everything = accepted | found.payments
    await wait_until(lambda: arrived(receivers, shop.path, everything), seen.left())
    verdict = judge(seen, found, receivers, [r.name for r in world.receivers.healthy])
    if run.smoke:
        verdict.duplicate_limit = None  # too few deliveries to measure the share against it
    verdict.checks = dict(world.checks)
    if fault.answer_within is not None:
        verdict.checks |= answer_checks(seen, fault.answer_within)
    verdict.not_ready_after = await pods.wait_ready(run.timing.ready_within)
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
    log.info("%s: %s", fault.name, ", ".join(verdict.failures()) or "passed")
    return verdict


@asynccontextmanager
async def world_of(run: Run, setup: str = faults.PLAIN) -> AsyncIterator[World]:
    """Private servers as ``setup`` says (see ``chaos.faults.PLAIN``), a migrated database,
    receivers and ready role pods for ``run``; everything stopped and removed on the way out."""
    async with AsyncExitStack() as stack:
        workdir = Path(tempfile.mkdtemp(prefix="svc-chaos-"))
        stack.callback(shutil.rmtree, workdir, True)
        cluster = None
        if setup == faults.CLUSTER:
            cluster = await stack.enter_async_context(private_rabbit_cluster())
            rabbitmq, amqp_url, queue_type = cluster.nodes[0], cluster.url, "quorum"
        else:
            rabbitmq = await stack.enter_async_context(private_rabbitmq())
            amqp_url, queue_type = rabbitmq.url, "classic"
        pair = stack.enter_context(private_postgres_pair()) if setup == faults.STANDBY else None
        postgres = pair.primary if pair is not None else stack.enter_context(private_postgres())
        redis = await stack.enter_async_context(PrivateRedis())
        migrated = await create_migrated(postgres.admin_url, DATABASE)
        database = pair.url(DATABASE) if pair is not None else migrated
        proxies: dict[str, TcpProxy] = {}
        if setup == faults.PROXIED:
            to_pg = await stack.enter_async_context(TcpProxy("127.0.0.1", postgres.port))
            to_amqp = await stack.enter_async_context(TcpProxy("127.0.0.1", rabbitmq.port))
            proxies = {faults.POSTGRESQL: to_pg, faults.RABBITMQ: to_amqp}
            database = database.replace(f":{postgres.port}/", f":{to_pg.port}/")
            amqp_url = amqp_url.replace(f":{rabbitmq.port}/", f":{to_amqp.port}/")
        run.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("SVC_")},
            "SVC_AMQP_URL": amqp_url,
            "SVC_QUEUE_TYPE": queue_type,
            "SVC_REDIS_URL": redis.url,
            "SVC_DATABASE_URL": database,
            "SVC_SECRET_KEY": new_key_text("chaos"),
            "SVC_NAMESPACE": f"chaos{os.getpid()}",
            "SVC_RETRY_LADDER": RETRY_LADDER,
            "SVC_RETRY_RESCUE_AFTER": RESCUE_AFTER,
            "SVC_ALLOW_PRIVATE_TARGETS": "true",
            "SVC_SHUTDOWN_GRACE": "5s",
            "SVC_RATE_LIMIT_LIVE": "0",  # the steady load must not be throttled
            "SVC_RATE_LIMIT_TEST": "0",
            "PYTHONUNBUFFERED": "1",
        }
        receivers = Receivers(HEALTHY_RECEIVERS)
        stack.push_async_callback(receivers.stop)
        await receivers.start()
        pods = Pods(run.env, workdir)
        stack.push_async_callback(pods.stop)
        pods.start()
        if waiting := await pods.wait_ready(90):
            logs = {r: pods[r].log_path.read_text(errors="replace").splitlines() for r in waiting}
            tails = "".join(f"\n--- {r}:\n" + "\n".join(lines[-20:]) for r, lines in logs.items())
            raise SuiteError(f"roles never ready: {', '.join(waiting)}{tails}")
        version = await _command("redis-server", "--version")
        run.versions = {
            "rabbitmq": (await rabbitmq.ctl("version")).strip(),
            "postgresql": postgres.version(),
            "redis": next((w[2:] for w in version.split() if w.startswith("v=")), version.strip()),
            "python": platform.python_version(),
        }
        yield World(pods, rabbitmq, postgres, redis, receivers, cluster, pair=pair, proxies=proxies)


async def run_suite(run: Run) -> Run:
    """Play every fault of ``run`` in turn, those of each set-up in a world of their own."""
    for setup, group in groupby(run.faults, lambda f: f.setup):
        played = list(group)
        async with world_of(run, setup) as world:
            _, *shops = await shops_of(run, world, ["warmup", *(f.name for f in played)])
            log.info("warmed up (%s); %d scenarios follow", setup, len(played))
            verdicts = [await play(run, world, f, s) for f, s in zip(played, shops, strict=True)]
            await asyncio.sleep(1)  # late duplicates of the last scenario still count
            for verdict, shop in zip(verdicts, shops, strict=True):
                got = [r.endpoints[shop.path].receipts for r in world.receivers.all]
                run.verdicts.append(replace(verdict, duplicates=sum(map(duplicates, got))))
    return run


def command(parser: argparse.ArgumentParser, work: Callable[[Any], Awaitable[int]]) -> int:
    """A fault-suite command: ``work(args)``'s exit status, or 2 when the run could not be set
    up, 3 when it overran its deadline, 130 when interrupted; all it started is stopped anyway."""
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    return asyncio.run(_guarded(work(args)))


async def _guarded(work: Awaitable[int]) -> int:
    main = asyncio.current_task()
    assert main is not None
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        asyncio.get_running_loop().add_signal_handler(sig, main.cancel)
    try:
        return await work
    except TimeoutError:
        log.error("the run overran its deadline; everything was stopped")
        return 3
    except asyncio.CancelledError:
        log.error("interrupted; everything was stopped")
        return 130
    except SuiteError as exc:
        log.error("%s", exc)
        return 2
