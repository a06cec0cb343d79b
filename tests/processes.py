"""Running roles as real subprocesses, configured like the test's in-process settings."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import fields

from harness.ports import free_port
from svc.ladder import RetryLadder
from svc.settings import Settings
from tests.conftest import wait_http


def environment(settings: Settings, **overrides: object) -> dict[str, str]:
    """``SVC_*`` variables that reproduce ``settings`` in a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    for f in fields(Settings):
        value = overrides.get(f.name, getattr(settings, f.name))
        if isinstance(value, RetryLadder):
            text = value.text
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        env[f"SVC_{f.name.upper()}"] = text
    return env


async def spawn(
    settings: Settings, role: str, **overrides: object
) -> tuple[asyncio.subprocess.Process, int]:
    """Start ``svc <role>`` on a free port (and a free ops port); returns once its /ready
    answers 200."""
    port, ops_port = free_port(), free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        role,
        env=environment(settings, http_port=port, ops_port=ops_port, **overrides),
    )
    try:
        await wait_http(f"http://127.0.0.1:{ops_port}/ready", timeout=30)
    except BaseException:
        process.kill()
        await process.wait()
        raise
    return process, port
