"""Role processes run like Kubernetes pods: ``svc api``, ``svc scheduler`` and ``svc dispatcher``
each in its own process, restarted after a short delay whenever it dies, as a Deployment would
(doubling the delay while it keeps dying soon after starting, like CrashLoopBackOff)."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from harness.ports import free_port

log = logging.getLogger(__name__)

ROLES = ("api", "scheduler", "dispatcher")
HEALTHY_AFTER = 30.0
"""A process that lived this long before dying restarts after the shortest delay again."""
MAX_DELAY = 10.0
_PR_SET_PDEATHSIG = 1


def svc(*args: str) -> list[str]:
    """The ``svc`` command of this interpreter's environment."""
    return [sys.executable, "-m", "cli", *args]


def die_with_parent() -> None:
    """In a child before exec: be killed when the harness dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class Pod:
    """One role: its ports, its log and every death seen (monotonic time, exit code)."""

    role: str
    port: int
    """The API's public port (``SVC_HTTP_PORT``); the other roles do not listen on theirs."""
    log_path: Path
    ops_port: int = field(default_factory=free_port)
    """``/health``, ``/ready`` and ``/metrics`` (``SVC_OPS_PORT``)."""
    process: asyncio.subprocess.Process | None = None
    deaths: list[tuple[float, int]] = field(default_factory=list)
    kills: int = 0
    """Deaths the harness caused on purpose (SIGKILL scenarios)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ops_url(self) -> str:
        return f"http://127.0.0.1:{self.ops_port}"


class Pods:
    """Starts, supervises, kills and stops the role processes."""

    def __init__(self, env: Mapping[str, str], logdir: Path, restart_delay: float = 1.0) -> None:
        self._env = dict(env)
        self._restart_delay = restart_delay
        self.pods = {role: Pod(role, free_port(), logdir / f"{role}.log") for role in ROLES}
        self._supervisors: list[asyncio.Task[None]] = []

    def __getitem__(self, role: str) -> Pod:
        return self.pods[role]

    def start(self) -> None:
        for pod in self.pods.values():
            self._supervisors.append(asyncio.create_task(self._supervise(pod)))

    async def _spawn(self, pod: Pod) -> asyncio.subprocess.Process:
        env = {**self._env, "SVC_HTTP_PORT": str(pod.port), "SVC_OPS_PORT": str(pod.ops_port)}
        with pod.log_path.open("ab") as output:
            return await asyncio.create_subprocess_exec(
                *svc(pod.role),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    async def _supervise(self, pod: Pod) -> None:
        quick_deaths = 0
        while True:
            started = time.monotonic()
            pod.process = await self._spawn(pod)
            code = await pod.process.wait()
            pod.deaths.append((time.monotonic(), code))
            lived = time.monotonic() - started
            quick_deaths = 0 if lived > HEALTHY_AFTER else quick_deaths + 1
            delay = min(self._restart_delay * 2 ** max(quick_deaths - 1, 0), MAX_DELAY)
            log.info(
                "%s exited with %d after %.1f s; restarting in %.1f s", pod.role, code, lived, delay
            )
            await asyncio.sleep(delay)

    def kill(self, role: str) -> None:
        """SIGKILL the role's process; its supervisor brings a new one up."""
        pod = self.pods[role]
        if pod.process is not None and pod.process.returncode is None:
            pod.kills += 1
            pod.process.kill()

    async def ready(self, session: aiohttp.ClientSession, role: str) -> bool:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with session.get(f"{self.pods[role].ops_url}/ready") as answer:
                return answer.status == 200
        return False

    async def wait_ready(self, within: float) -> list[str]:
        """Wait until every role answers ``/ready`` with 200; returns the roles still not ready."""
        deadline = time.monotonic() + within
        waiting = list(ROLES)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while waiting and time.monotonic() < deadline:
                answers = await asyncio.gather(*(self.ready(session, r) for r in waiting))
                waiting = [role for role, ok in zip(waiting, answers, strict=True) if not ok]
                if waiting:
                    await asyncio.sleep(0.2)
        return waiting

    async def stop(self, grace: float = 10.0) -> None:
        """Stop supervising, SIGTERM every role (a graceful drain), SIGKILL what outlives
        ``grace``."""
        for task in self._supervisors:
            task.cancel()
        await asyncio.gather(*self._supervisors, return_exceptions=True)
        running = [
            p.process
            for p in self.pods.values()
            if p.process is not None and p.process.returncode is None
        ]
        for process in running:
            process.terminate()
        for process in running:
            try:
                await asyncio.wait_for(process.wait(), grace)
            except TimeoutError:
                process.kill()
                await process.wait()
