"""The ``svc`` command: the one place that reads the environment and starts roles."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from cli import keys
from svc.context import Context, open_context
from svc.crypto import new_key_text
from svc.db.migrate import MigrationError
from svc.money.model.startup import check_settings as check_money_settings
from svc.settings import Settings, SettingsError

log = logging.getLogger("svc")

YOUNG_COLLECTION_AFTER = 200_000
"""Net new container objects between two collections of the youngest generation (700 by
default) at least; see ``serve_roles``."""
YOUNG_OBJECTS_PER_DELIVERY = 100
"""Young objects allowed for each delivery a dispatcher may have in flight
(``SVC_DISPATCHER_CONCURRENCY``): a delivery under way holds some 45, so the threshold stays
above what a full delivery engine holds whatever its size."""


def young_collection_after(settings: Settings) -> int:
    """The youngest generation's threshold for a process of these settings."""
    return max(YOUNG_COLLECTION_AFTER, YOUNG_OBJECTS_PER_DELIVERY * settings.dispatcher_concurrency)


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


def settle_collector(young: int = YOUNG_COLLECTION_AFTER) -> None:
    """Freeze what exists now out of garbage collection and collect the youngest generation
    after ``young`` new objects (see ``serve_roles``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(young, *gc.get_threshold()[1:])


async def serve_roles(
    settings: Settings, names: tuple[str, ...], stop: asyncio.Event, freeze: bool = False
) -> None:
    """Run the named roles and their HTTP servers in this process until ``stop`` is set: the
    ops app (``/health``, ``/ready``, ``/metrics``) on ``SVC_OPS_PORT`` always, and the API's
    public app on ``SVC_HTTP_PORT`` when the API is one of them.

    With ``freeze``, the objects that exist once every role has started (modules, classes,
    settings, pools, caches: some 70,000) move to the collector's permanent generation, so
    a full garbage collection no longer walks them: in a loaded dispatcher, such a collection
    is a pause of tens of milliseconds that every delivery in flight waits through.

    The youngest generation is then collected after ``young_collection_after`` new objects
    rather than Python's 700. Almost everything a delivery makes is freed by reference
    counting when it is done; with 700, a delivery that waits 200 ms for its receiver lives
    through dozens of young collections, its objects are promoted to the oldest generation,
    and collecting them there costs a dispatcher about an eighth of its CPU. The count is of
    objects made less objects freed, so the objects of the deliveries under way (some 45
    each) count as long as they live: a threshold below what a full delivery engine holds is
    crossed again and again, and each young collection walks every delivery under way. The
    threshold therefore grows with the deliveries in flight (``YOUNG_OBJECTS_PER_DELIVERY``).
    """
    from svc.http import ops_app, serve

    async with open_context(settings) as ctx:
        servers = [(ops_app(ctx), settings.ops_port)]
        if "api" in names:
            from api.app import build_app

            servers.append((build_app(ctx), settings.http_port))
        async with asyncio.TaskGroup() as group:
            for app, port in servers:
                group.create_task(
                    serve(app, settings.http_host, port, stop, settings.shutdown_grace)
                )
            for runner in _roles(names):
                group.create_task(runner(ctx, stop))
            if freeze:
                settle_collector(young_collection_after(settings))
                log.info(
                    "%d start-up objects kept out of garbage collection", gc.get_freeze_count()
                )
            log.info("started %s", ", ".join(names))
    log.info("stopped cleanly")


async def _main_roles(settings: Settings, names: tuple[str, ...]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve_roles(settings, names, stop, freeze=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svc", description="Payment service with webhooks.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="api, scheduler and dispatcher in one process (a laptop)")
    sub.add_parser("api", help="the public HTTP API")
    sub.add_parser(
        "scheduler", help="resends and test sends, outbox sweep, expiry, payouts and other timers"
    )
    sub.add_parser("dispatcher", help="signed deliveries")
    sub.add_parser("migrate", help="apply database migrations (safe to run from many pods)")
    listen = sub.add_parser("listen", help="a local receiver that verifies and prints deliveries")
    listen.add_argument("--port", type=int, default=9000, help="port to receive on (default: 9000)")
    listen.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    listen.add_argument("--secret", help="the endpoint's whsec_ secret; without it, no check")
    terminals = sub.add_parser("terminals", help="payment terminals").add_subparsers(
        dest="terminals_command", required=True
    )
    register = terminals.add_parser(
        "create", help='register a terminal; prints {"id": "trm_…", "secret": "trmsec_…"}'
    )
    register.add_argument(
        "--env", choices=("test", "live"), required=True, help="the terminal's environment"
    )
    register.add_argument("--org", default="default", help="organisation name (default: default)")
    register.add_argument("--name", required=True, help="shown in the terminal list")
    keys.add_parser(sub)
    pricing = sub.add_parser("pricing", help="an organisation's prices").add_subparsers(
        dest="pricing_command", required=True
    )
    show = pricing.add_parser("show", help="print the prices the organisation pays")
    show.add_argument("--org", default="default", help="organisation name (default: default)")
    change = pricing.add_parser("set", help="give the organisation its own prices")
    change.add_argument("--org", default="default", help="organisation name (default: default)")
    change.add_argument(
        "rates",
        nargs="?",
        default="",
        help="e.g. online=2.5%%+25,terminal=1.5%%+10,chargeback=1000",
    )
    change.add_argument("--reset", action="store_true", help="back to SVC_PRICING first")
    orgs = sub.add_parser("orgs", help="organisations").add_subparsers(
        dest="orgs_command", required=True
    )
    orgs.add_parser("list", help="print each organisation's id and name, one per line")
    secrets = sub.add_parser("secrets", help="the key that encrypts secrets at rest")
    secrets_sub = secrets.add_subparsers(dest="secrets_command", required=True)
    secrets_sub.add_parser("new-key", help="print a new KEYID:KEY item for SVC_SECRET_KEY")
    secrets_sub.add_parser(
        "reencrypt", help="re-encrypt what endpoints keep sealed under the first SVC_SECRET_KEY key"
    )
    return parser


ROLES = {
    "run": ("api", "scheduler", "dispatcher"),
    "api": ("api",),
    "scheduler": ("scheduler",),
    "dispatcher": ("dispatcher",),
}


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings of ``SVC_*`` variables, checked by every domain that reads them."""
    settings = Settings.from_env(environ)
    check_money_settings(settings)
    return settings


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "secrets" and args.secrets_command == "new-key":
        print(new_key_text())
        return 0
    try:
        settings = load_settings()
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
    try:
        return _command(args, settings)
    except (SettingsError, MigrationError) as exc:
        print(f"svc: {exc}", file=sys.stderr)
        return 2


def _command(args: argparse.Namespace, settings: Settings) -> int:
    from cli import admin

    if args.command == "listen":
        from cli.listen import run_listener

        run_listener(args.host, args.port, args.secret)
    elif args.command == "migrate":
        applied = asyncio.run(admin.run_migrations(settings))
        log.info("schema is current (%d migrations applied now)", len(applied))
    elif args.command == "terminals":
        print(asyncio.run(admin.create_terminal(settings, args.env, args.org, args.name)))
    elif args.command == "keys":
        return keys.run(args, settings)
    elif args.command == "pricing":
        return _pricing(args, settings)
    elif args.command == "orgs":
        for org_id, name in asyncio.run(admin.list_orgs(settings)):
            print(f"{org_id}\t{name}")
    elif args.command == "secrets":
        count = asyncio.run(admin.reencrypt(settings))
        log.info("re-encrypted %d sealed columns of endpoints", count)
    else:
        _install_uvloop()
        asyncio.run(_main_roles(settings, ROLES[args.command]))
    return 0


def _pricing(args: argparse.Namespace, settings: Settings) -> int:
    from cli import admin

    rates = "" if args.pricing_command == "show" else args.rates
    reset = args.pricing_command == "set" and args.reset
    try:
        print(asyncio.run(admin.set_pricing(settings, args.org, rates, reset)))
    except ValueError as exc:
        print(f"svc: {exc}", file=sys.stderr)
        return 2
    return 0


def _install_uvloop() -> None:
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
