"""Processes under test: started, stopped and waited for, and the ``svc`` roles run as pods."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import aiohttp

from harness.ports import cancel, free_port, wait_ready
from svc.ladder import RetryLadder
from svc.settings import Settings

log = logging.getLogger(__name__)

ROLES = ("api", "scheduler", "dispatcher")
HEALTHY_AFTER = 30.0  # a pod that lived this long restarts after the shortest delay again
RESTART_DELAY = 1.0
MAX_DELAY = 10.0
_PR_SET_PDEATHSIG = 1


def svc(*args: str) -> list[str]:
    """The ``svc`` command of this interpreter's environment."""
    return [sys.executable, "-m", "cli", *args]


def die_with_parent() -> None:
    """In a child before exec: be killed when the harness dies, however it dies."""
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def environment(settings: Settings, **overrides: object) -> dict[str, str]:
    """``SVC_*`` variables that reproduce ``settings`` in a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    for f in fields(Settings):
        value = overrides.get(f.name, getattr(settings, f.name))
        if isinstance(value, RetryLadder):
            value = value.text
        elif isinstance(value, bool):
            value = "true" if value else "false"
        env[f"SVC_{f.name.upper()}"] = str(value)
    return env


async def spawn(
    settings: Settings, role: str, **overrides: object
) -> tuple[asyncio.subprocess.Process, int]:
    """Start ``svc <role>`` on a free port and ops port; returns once ``/ready`` answers 200."""
    port, ops_port = free_port(), free_port()
    env = environment(settings, http_port=port, ops_port=ops_port, **overrides)
    process = await asyncio.create_subprocess_exec(*svc(role), env=env)
    try:
        await wait_ready(f"http://127.0.0.1:{ops_port}/ready", process)
    except BaseException:
        await ended(process, 0)
        raise
    return process, port


async def ended(process: asyncio.subprocess.Process | None, within: float) -> None:
    """Wait up to ``within`` seconds for ``process`` (if any) to exit, then SIGKILL it."""
    if process is None or process.returncode is not None:
        return
    try:
        await asyncio.wait_for(process.wait(), within)
    except TimeoutError:
        process.kill()
        await process.wait()


class Processes:
    """Processes in sessions of their own (a stop reaches their children), dying with us."""

    def __init__(self, logdir: Path) -> None:
        self._logdir = logdir
        self.started: list[subprocess.Popen[bytes]] = []

    def start(
        self, name: str, command: Sequence[str], env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` with ``env`` added to this one's, logging to ``<name>.log``."""
        with (self._logdir / f"{name}.log").open("ab") as output:
            process = subprocess.Popen(
                list(command),
                env={**os.environ, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        self.started.append(process)
        return process

    async def stop(
        self, process: subprocess.Popen[bytes], grace: float = 15, sig: int = signal.SIGTERM
    ) -> None:
        """``sig`` (SIGTERM: graceful drain), then SIGKILL to the process group after ``grace``."""
        if process.poll() is None:
            process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, grace)
        # The group goes too: what outlived ``grace``, pool children (prefork, dramatiq).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await asyncio.to_thread(process.wait)
        if process in self.started:
            self.started.remove(process)

    async def stop_all(self, grace: float = 5, sig: int = signal.SIGTERM) -> None:
        for process in list(reversed(self.started)):
            await self.stop(process, grace, sig)


@dataclass
class Pod:
    """One role: its ports, its log, its deaths (monotonic time, exit code) and our kills."""

    role: str
    port: int
    log_path: Path
    ops_port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    deaths: list[tuple[float, int]] = field(default_factory=list)
    kills: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ops_url(self) -> str:
        return f"http://127.0.0.1:{self.ops_port}"


class Pods:
    """The role processes, restarted whenever they die, with a doubling delay while they die
    young (like Kubernetes' CrashLoopBackOff)."""

    def __init__(self, env: Mapping[str, str], logdir: Path) -> None:
        self._env = dict(env)
        self._processes = Processes(logdir)
        self.pods = {role: Pod(role, free_port(), logdir / f"{role}.log") for role in ROLES}
        self._supervisors: list[asyncio.Task[None]] = []

    def __getitem__(self, role: str) -> Pod:
        return self.pods[role]

    def start(self) -> None:
        self._supervisors += [asyncio.create_task(self._supervise(p)) for p in self.pods.values()]

    async def _supervise(self, pod: Pod) -> None:
        quick_deaths = 0
        env = {**self._env, "SVC_HTTP_PORT": str(pod.port), "SVC_OPS_PORT": str(pod.ops_port)}
        while True:
            started = time.monotonic()
            pod.process = self._processes.start(pod.role, svc(pod.role), env)
            code = await asyncio.to_thread(pod.process.wait)
            await self._processes.stop(pod.process)  # what it left in its group goes too
            pod.deaths.append((time.monotonic(), code))
            lived = time.monotonic() - started
            quick_deaths = 0 if lived > HEALTHY_AFTER else quick_deaths + 1
            delay = min(RESTART_DELAY * 2 ** max(quick_deaths - 1, 0), MAX_DELAY)
            log.info(
                "%s exited with %d after %.1f s; restarting in %.1f s", pod.role, code, lived, delay
            )
            await asyncio.sleep(delay)

    def kill(self, role: str) -> None:
        """SIGKILL the role's process; its supervisor brings a new one up."""
        pod = self.pods[role]
        if pod.process is not None and pod.process.poll() is None:
            pod.kills += 1
            pod.process.kill()

    async def ready(self, session: aiohttp.ClientSession, role: str) -> str:
        """The status of the role's ``/ready`` (``unanswered`` when it does not answer)."""
        try:
            async with session.get(f"{self.pods[role].ops_url}/ready") as answer:
                return str(answer.status)
        except (aiohttp.ClientError, TimeoutError):
            return "unanswered"

    async def wait_ready(self, within: float) -> list[str]:
        """Wait until every role answers ``/ready`` with 200; returns the roles still not ready."""
        deadline = time.monotonic() + within
        waiting = list(ROLES)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as session:
            while waiting and time.monotonic() < deadline:
                answers = await asyncio.gather(*(self.ready(session, r) for r in waiting))
                waiting = [role for role, got in zip(waiting, answers, strict=True) if got != "200"]
                if waiting:
                    await asyncio.sleep(0.2)
        return waiting

    async def stop(self, grace: float = 10.0) -> None:
        """Stop supervising, SIGTERM every role, SIGKILL what outlives ``grace``."""
        await cancel(*self._supervisors)
        await self._processes.stop_all(grace)
