"""What teams use instead, driven like the service: Celery (prefork, gevent) and Dramatiq workers.

Their producers are their own clients in a separate process (``benchmarks.producer``); the
workers are the frameworks' own command-line programs.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.workload import System, Target
from harness.cleanup import delete_queues
from harness.processes import Processes


@dataclass
class FrameworkSystem(System):
    """A framework worker plus its producer module; subclasses say how to start the worker."""

    procs: Processes
    amqp_url: str
    workdir: Path
    name: str
    queue: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:10]}_jobs")
    _worker: subprocess.Popen[bytes] | None = None
    _batches: int = 0

    module = ""

    def env(self) -> dict[str, str]:
        return {"BENCH_AMQP_URL": self.amqp_url, "BENCH_QUEUE": self.queue}

    def worker_command(self) -> list[str]:
        raise NotImplementedError

    async def publish(self, targets: Sequence[Target], count: int, rate: float) -> dict[str, int]:
        self._batches += 1
        stem = self.workdir / f"{self.name}-{self._batches}"
        targets_file, created_file = stem.with_suffix(".targets.json"), stem.with_suffix(".tsv")
        targets_file.write_text(json.dumps([{"url": t.url, "secret": t.secret} for t in targets]))
        command = [
            sys.executable,
            "-m",
            self.module,
            str(targets_file),
            str(count),
            str(rate),
            str(created_file),
        ]
        producer = self.procs.start(f"{self.name}-producer", command, self.env())
        code = await asyncio.to_thread(producer.wait)
        self.procs.started.remove(producer)
        if code != 0:
            raise RuntimeError(f"{self.name} producer exited with {code}")
        created = {}
        for line in created_file.read_text().splitlines():
            event_id, created_ms = line.split("\t")
            created[event_id] = int(created_ms)
        return created

    async def start(self) -> None:
        self._worker = self.procs.start(f"{self.name}-worker", self.worker_command(), self.env())

    async def stop(self) -> None:
        if self._worker is not None:
            # Runs stop workers only once every delivery arrived: nothing is left to drain.
            await self.procs.stop(self._worker, grace=10, sig=signal.SIGQUIT)
            self._worker = None

    def cpu_groups(self) -> dict[str, list[int]]:
        return {"worker": [] if self._worker is None else [self._worker.pid]}


@dataclass
class CelerySystem(FrameworkSystem):
    """``celery worker`` with the prefork pool (2 processes) or gevent (100 greenlets)."""

    pool: str = "prefork"

    module = "benchmarks.celery_worker"

    def __post_init__(self) -> None:
        self.label = "Celery prefork ×2" if self.pool == "prefork" else "Celery gevent ×100"

    def env(self) -> dict[str, str]:
        heartbeat = "0" if self.pool == "gevent" else "120"
        return {**super().env(), "BENCH_BROKER_HEARTBEAT": heartbeat}

    def worker_command(self) -> list[str]:
        concurrency = "2" if self.pool == "prefork" else "100"
        celery = str(Path(sys.executable).parent / "celery")
        return [
            celery,
            "-A",
            self.module,
            "worker",
            "-P",
            self.pool,
            "-c",
            concurrency,
            "-Q",
            self.queue,
            "-l",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]

    async def close(self) -> None:
        await self.stop()
        await delete_queues(self.amqp_url, [self.queue], [self.queue])


@dataclass
class DramatiqSystem(FrameworkSystem):
    """``dramatiq`` with 2 processes × 8 threads."""

    module = "benchmarks.dramatiq_worker"

    def __post_init__(self) -> None:
        self.label = "Dramatiq 2×8"

    def worker_command(self) -> list[str]:
        dramatiq = str(Path(sys.executable).parent / "dramatiq")
        return [dramatiq, self.module, "-p", "2", "-t", "8"]

    async def close(self) -> None:
        await self.stop()
        names = [self.queue, f"{self.queue}.DQ", f"{self.queue}.XQ"]
        await delete_queues(self.amqp_url, names)
