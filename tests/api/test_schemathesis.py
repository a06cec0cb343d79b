"""Schemathesis against the live service: no server error, no answer outside the description."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from svc.context import Context
from tests.conftest import Running

# Bounded so the whole run stays under a minute on two cores: examples and coverage run in
# full, fuzzing and stateful testing share what is left of MAX_TIME.
MAX_EXAMPLES = 15
MAX_TIME = 30
SEED = 20261121
CONFIG = Path(__file__).with_name("schemathesis.toml")
HOOKS = Path(__file__).with_name("schemathesis_hooks.py")
LIMIT_ABOVE_THE_RUN = 1_000_000


@pytest.mark.timeout(MAX_TIME + 60)
# Every request Schemathesis sends comes from one address, and its invalid-credential checks
# alone pass the failed-authentication limit of 30 a minute on a fast host; the limit's own
# answer (429) is tested in tests/security/test_limits.py, so here it is set above
# what one run can send, and every invalid key must still get 401 or 403.
@pytest.mark.settings(failed_auth_limit=LIMIT_ABOVE_THE_RUN)
async def test_schemathesis_finds_no_violation(
    service: Running, ctx: Context, tmp_path: Path
) -> None:
    key, _ = await ctx.api_keys.create("test", "schemathesis")
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        f"{service.base_url}/openapi.json",
        "--mode",
        "all",
        "--header",
        f"Authorization: Bearer {key}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--max-time",
        str(MAX_TIME),
        "--seed",
        str(SEED),
        "--request-timeout",
        "10",
        "--generation-database",
        "none",
        "--no-color",
        "--output-sanitize",
        "false",
        "--report-dir",
        str(tmp_path),
    ]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=tmp_path,
        env={**os.environ, "SCHEMATHESIS_HOOKS": str(HOOKS)},
    )
    output, _ = await process.communicate()
    report = output.decode(errors="replace")
    assert process.returncode == 0, report
