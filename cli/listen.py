"""``svc listen``: a local receiver for trying deliveries; verifies and prints each event."""

from __future__ import annotations

import sys
from typing import TextIO

from aiohttp import web

from svc.signing import SIGNATURE_HEADER, SignatureError, verify


def listener(secret: str | None, out: TextIO = sys.stdout) -> web.Application:
    """An app answering 204 to verified POSTs (any path) and 400 to bad signatures."""

    async def receive(request: web.Request) -> web.Response:
        body = await request.read()
        header = request.headers.get(SIGNATURE_HEADER, "")
        if secret is not None:
            try:
                verify(header, body, secret)
            except SignatureError as exc:
                print(f"rejected {request.path}: {exc}", file=out, flush=True)
                return web.Response(status=400, text=str(exc))
        state = "verified" if secret is not None else "unverified"
        event_type = request.headers.get("Svc-Event-Type", "?")
        print(f"{state} {event_type} {body.decode(errors='replace')}", file=out, flush=True)
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/{tail:.*}", receive)
    return app


def run_listener(host: str, port: int, secret: str | None) -> None:
    print(f"listening on http://{host}:{port}/ (any path)", file=sys.stderr, flush=True)
    web.run_app(listener(secret), host=host, port=port, print=None, access_log=None)
