"""Processes started by the harness: a stop reaches a process's children, and the role
environment reproduces a test's settings."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil

from harness.processes import Processes, environment
from svc.settings import Settings


async def test_a_stop_takes_the_children_that_ignore_it_too(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    shell = processes.start("shell", ["sh", "-c", "trap '' TERM; sleep 60 & sleep 60 & wait"])
    for _ in range(100):  # until the shell has started both
        children = psutil.Process(shell.pid).children()
        if len(children) == 2:
            break
        await asyncio.sleep(0.05)
    await processes.stop(shell, grace=0.5)
    assert shell.returncode == -signal.SIGKILL
    # SIGKILL reaches the group at once but takes effect as each child is next scheduled:
    # they must be gone within a moment (each would otherwise sleep for a minute).
    _, alive = psutil.wait_procs(children, timeout=5)
    assert not any(child.status() != "zombie" for child in alive)
    assert processes.started == []
    assert (tmp_path / "shell.log").exists()


def test_the_environment_reproduces_the_settings(settings: Settings) -> None:
    env = environment(settings, http_port=1234)
    assert env["SVC_HTTP_PORT"] == "1234"
    assert env["SVC_NAMESPACE"] == settings.namespace
    assert env["SVC_RETRY_LADDER"] == settings.retry_ladder.text
    assert not any(k.startswith("SVC_") and k not in env for k in os.environ)
