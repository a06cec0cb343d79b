"""The ``svc`` command: the one place that reads the environment and starts roles."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from svc.context import Context, open_context
from svc.settings import Settings, SettingsError

log = logging.getLogger("svc")

RoleRunner = Callable[[Context, asyncio.Event], Coroutine[Any, Any, None]]


def _roles(names: tuple[str, ...]) -> list[RoleRunner]:
    runners: list[RoleRunner] = []
    if "scheduler" in names:
        from scheduler.service import run as run_scheduler

        runners.append(run_scheduler)
    if "dispatcher" in names:
        from dispatcher.service import run as run_dispatcher

        runners.append(run_dispatcher)
    return runners


async def serve_roles(settings: Settings, names: tuple[str, ...], stop: asyncio.Event) -> None:
    """Run the named roles and their HTTP server in this process until ``stop`` is set."""
    from svc.http import ops_app, serve

    async with open_context(settings) as ctx:
        if "api" in names:
            from api.app import build_app

            app = build_app(ctx)
        else:
            app = ops_app(ctx)
        async with asyncio.TaskGroup() as group:
            group.create_task(
                serve(app, settings.http_host, settings.http_port, stop, settings.shutdown_grace)
            )
            for runner in _roles(names):
                group.create_task(runner(ctx, stop))
            log.info("started %s", ", ".join(names))
    log.info("stopped cleanly")


async def _main_roles(settings: Settings, names: tuple[str, ...]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve_roles(settings, names, stop)


async def _create_key(settings: Settings, env: str, org: str) -> str:
    from redis.asyncio import Redis

    from svc.store.apikeys import ApiKeys
    from svc.store.keys import Keys

    redis = Redis.from_url(settings.redis_url)
    try:
        key, _ = await ApiKeys(redis, Keys(settings.namespace)).create(env, org)
    finally:
        await redis.aclose()
    return key


async def _create_terminal(settings: Settings, env: str, org: str, name: str) -> str:
    import orjson
    from redis.asyncio import Redis

    from svc.store.apikeys import ApiKeys, Scope
    from svc.store.events import Events
    from svc.store.keys import Keys
    from svc.store.terminals import Terminals

    redis = Redis.from_url(settings.redis_url)
    try:
        keys = Keys(settings.namespace)
        scope = Scope(await ApiKeys(redis, keys).organisation(org), env)
        events = Events(redis, keys, settings.event_retention)
        terminal, secret = await Terminals(redis, keys, events).register(scope, name)
    finally:
        await redis.aclose()
    return orjson.dumps({"id": terminal.id, "secret": secret}).decode()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svc", description="Payment service with webhooks.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="api, scheduler and dispatcher in one process (a laptop)")
    sub.add_parser("api", help="the public HTTP API")
    sub.add_parser("scheduler", help="fan-out, retry ladder, resend, outbox sweep")
    sub.add_parser("dispatcher", help="signed deliveries")
    listen = sub.add_parser("listen", help="a local receiver that verifies and prints deliveries")
    listen.add_argument("--port", type=int, default=9000)
    listen.add_argument("--host", default="127.0.0.1")
    listen.add_argument("--secret", help="the endpoint's whsec_ secret; without it, no check")
    terminals = sub.add_parser("terminals", help="payment terminals").add_subparsers(
        dest="terminals_command", required=True
    )
    register = terminals.add_parser(
        "create", help='register a terminal; prints {"id": "trm_…", "secret": "trmsec_…"}'
    )
    register.add_argument("--env", choices=("test", "live"), required=True)
    register.add_argument("--org", default="default", help="organisation name (default: default)")
    register.add_argument("--name", required=True, help="shown in the terminal list")
    keys = sub.add_parser("keys", help="API keys").add_subparsers(
        dest="keys_command", required=True
    )
    create = keys.add_parser("create", help="create a key and print it alone on stdout")
    create.add_argument("--env", choices=("test", "live"), required=True)
    create.add_argument("--org", default="default", help="organisation name (default: default)")
    return parser


ROLES = {
    "run": ("api", "scheduler", "dispatcher"),
    "api": ("api",),
    "scheduler": ("scheduler",),
    "dispatcher": ("dispatcher",),
}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"svc: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("aiormq").setLevel(logging.WARNING)
    logging.getLogger("aio_pika").setLevel(logging.WARNING)
    if args.command == "listen":
        from svc.listen import run_listener

        run_listener(args.host, args.port, args.secret)
        return 0
    if args.command == "terminals":
        print(asyncio.run(_create_terminal(settings, args.env, args.org, args.name)))
        return 0
    if args.command == "keys":
        print(asyncio.run(_create_key(settings, args.env, args.org)))
        return 0
    _install_uvloop()
    asyncio.run(_main_roles(settings, ROLES[args.command]))
    return 0


def _install_uvloop() -> None:
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


if __name__ == "__main__":
    sys.exit(main())
