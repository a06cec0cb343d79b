"""The ``svc`` command's administrative subcommands print exactly what they promise."""

from __future__ import annotations

import asyncio
import re
import sys

import orjson

from harness.ports import free_port
from harness.processes import environment
from svc.context import Context
from svc.settings import Settings


async def _svc(settings: Settings, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        *args,
        env=environment(settings),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0
    return out.decode()


async def test_keys_create_prints_the_key_alone(settings: Settings, ctx: Context) -> None:
    out = await _svc(settings, "keys", "create", "--env", "live", "--org", "acme")
    assert out.count("\n") == 1
    key = out.strip()
    assert key.startswith("svc_live_")
    scope = await ctx.api_keys.resolve(key)
    assert scope is not None and scope.env == "live"
    assert scope.org == await ctx.orgs.ensure("acme")


async def test_keys_are_listed_rolled_and_revoked(settings: Settings, ctx: Context) -> None:
    made = orjson.loads(
        await _svc(
            settings,
            *("keys", "create", "--env", "test", "--org", "keyring", "--json"),
            *("--name", "till 4", "--permissions", "payments:write, refunds:read"),
        )
    )
    full = (await _svc(settings, "keys", "create", "--env", "live", "--org", "keyring")).strip()
    listed = [
        orjson.loads(line)
        for line in (
            await _svc(settings, "keys", "list", "--org", "keyring", "--json")
        ).splitlines()
    ]
    assert [key["name"] for key in listed] == ["", "till 4"]
    assert listed[1]["id"] == made["id"] and listed[1]["permissions"] == [
        "payments:write",
        "refunds:read",
    ]
    assert listed[0]["permissions"] is None and full[:12] == listed[0]["prefix"]
    table = await _svc(settings, "keys", "list", "--org", "keyring", "--env", "test")
    assert table.count("\n") == 1 and "payments:write,refunds:read" in table

    rolled = await _svc(settings, "keys", "roll", made["id"], "--expire-previous-in", "3600")
    new = rolled.strip()
    assert rolled.count("\n") == 1 and new.startswith("svc_test_") and new != made["key"]
    assert await ctx.api_keys.resolve(new) == await ctx.api_keys.resolve(made["key"])

    out = await _svc(settings, "keys", "revoke", made["id"])
    assert out.startswith(made["id"] + "\trevoked ")
    assert await ctx.api_keys.resolve(new) is None
    assert await ctx.api_keys.resolve(made["key"]) is None
    assert await ctx.api_keys.resolve(full) is not None


async def test_keys_refuse_an_unknown_permission(settings: Settings) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "cli", "keys", "create", "--env", "test", "--permissions", "cards:read"),
        env=environment(settings),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 2 and out == b""
    assert b"'cards:read' is not RESOURCE:read|write" in err


async def test_terminals_create_registers_a_device(settings: Settings, ctx: Context) -> None:
    out = await _svc(
        settings, "terminals", "create", "--env", "test", "--org", "acme", "--name", "Till 2"
    )
    created = orjson.loads(out)
    terminal = await ctx.terminals.authenticate(created["secret"])
    assert terminal is not None and terminal.id == created["id"]
    assert terminal.name == "Till 2" and not terminal.simulated and terminal.status == "offline"


async def test_a_role_keeps_its_start_up_objects_out_of_garbage_collection(
    settings: Settings, ctx: Context
) -> None:
    """Full collections would walk every module and class each time (65 ms in a dispatcher)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli",
        "dispatcher",
        env=environment(settings, http_port=free_port()),
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    found = None
    try:
        async with asyncio.timeout(30):
            while line := (await process.stderr.readline()).decode():
                if found := re.search(r"(\d+) start-up objects kept out of garbage", line):
                    break
        assert found, "the role started without freezing its start-up objects"
        assert int(found.group(1)) > 10_000
    finally:
        process.terminate()
        await process.wait()
