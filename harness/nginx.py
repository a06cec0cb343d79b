"""The benchmarks' receivers: nginx answering 204, a Python stand-in with its log, a black hole.

nginx answers 503 under ``/storm/`` while a flag file exists and may listen on several ports,
all logging to one log. Slow endpoints on a further port answer 204 after a delay, in nginx
with the echo module (``echo_sleep``), else in a stand-in of their own. The stand-in is this
module run as ``python -m harness.nginx PREFIX DELAY PORT...``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO

from aiohttp import web

from harness.ports import free_port, wait_port
from harness.processes import Processes

log = logging.getLogger(__name__)

NGINX_LOG_FORMAT = (
    "$msec $status $content_length $uri $http_svc_event_id $http_svc_signature $request_time"
)
"""One line per request, read back by ``benchmarks.receipts``."""


def format_line(
    at: float, status: int, size: int, path: str, event_id: str, sig: str, took: float = 0.0
) -> str:
    """A log line as nginx writes it with ``NGINX_LOG_FORMAT`` (for the stand-in)."""
    return f"{at:.3f} {status} {size} {path} {event_id or '-'} {sig or '-'} {took:.3f}\n"


_NGINX_CONF = """\
{load_module}worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
    log_format bench '{log_format}';
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    client_body_buffer_size 64k;
    keepalive_requests 1000000000;
    keepalive_timeout 300s;
    server {{
{listen}        access_log {prefix}/access.log bench{buffering};
        location /storm/ {{
            if (-f {prefix}/failing) {{ return 503; }}
            return 204;
        }}
        location / {{ return 204; }}
    }}
{slow_server}}}
"""

_SLOW_SERVER = """\
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        access_log {prefix}/access.log bench{buffering};
        location / {{
            echo_sleep {delay};
            echo_status 204;
        }}
    }}
"""


ECHO_MODULES = (
    "/usr/lib/nginx/modules/ngx_http_echo_module.so",
    "/usr/local/lib/nginx/modules/ngx_http_echo_module.so",
    "/usr/share/nginx/modules/ngx_http_echo_module.so",
)
"""Where nginx's echo module (``echo_sleep``, Debian's ``libnginx-mod-http-echo``) may be."""
SBIN = "/usr/sbin:/usr/local/sbin"
"""Where Debian puts nginx, often off a user's PATH."""


class Receiver:
    """A fast receiver in its own process, logging every request; with ``slow_delay`` also
    slow endpoints (``slow_url``) that answer 204 after that many seconds."""

    def __init__(
        self,
        workdir: Path,
        buffered: bool,
        prefer_nginx: bool = True,
        slow_delay: float | None = None,
        ports: int = 1,
        name: str = "receiver",
    ) -> None:
        self.prefix = workdir / name
        self.ports = [free_port() for _ in range(ports)]
        self.slow_delay = slow_delay
        self.slow_port = free_port() if slow_delay is not None else 0
        self._buffered = buffered
        self._nginx = None
        self._echo = None
        """The echo module, where nginx serves the slow endpoints."""
        if prefer_nginx:
            self._nginx = shutil.which("nginx") or shutil.which("nginx", path=SBIN)
        if self._nginx and slow_delay is not None:
            self._echo = next((p for p in ECHO_MODULES if os.path.isfile(p)), None)
        self._slow_prefix = None
        """Where a stand-in of its own serves the slow endpoints, if nginx does not."""
        if slow_delay is not None and not self._echo:
            self._slow_prefix = workdir / f"{name}-slow"
        self._process: subprocess.Popen[bytes] | None = None
        self._processes = Processes(workdir)

    @property
    def kind(self) -> str:
        return "nginx" if self._nginx else "aiohttp"

    @property
    def slow_kind(self) -> str | None:
        """What answers the slow endpoints, for the results."""
        if self.slow_delay is None:
            return None
        if self._echo:
            return f"nginx echo module, echo_sleep {self.slow_delay:g}"
        return f"aiohttp stand-in, asyncio.sleep({self.slow_delay:g})"

    @property
    def log_paths(self) -> list[Path]:
        """Every log the receiver writes (a slow stand-in keeps its own)."""
        return [prefix / "access.log" for prefix in (self.prefix, self._slow_prefix) if prefix]

    def url(self, path: str, port: int = 0) -> str:
        """A URL of the fast endpoints on the receiver's ``port``-th port."""
        return f"http://127.0.0.1:{self.ports[port]}{path}"

    def slow_url(self, path: str) -> str:
        assert self.slow_delay is not None, "the receiver has no slow endpoints"
        return f"http://127.0.0.1:{self.slow_port}{path}"

    def fail(self, failing: bool) -> None:
        """Make ``/storm/`` answer 503 (``True``) or 204 again (``False``)."""
        flag = self.prefix / "failing"
        if failing:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)

    @property
    def pids(self) -> list[int]:
        """Every receiver process (a slow stand-in too), for CPU accounting."""
        return [p.pid for p in self._processes.started]

    def version(self) -> str:
        if not self._nginx:
            return "aiohttp stand-in"
        done = subprocess.run([self._nginx, "-v"], capture_output=True, text=True, check=False)
        return done.stderr.strip().removeprefix("nginx version: ").removeprefix("nginx/")

    async def __aenter__(self) -> Receiver:
        (self.prefix / "tmp").mkdir(parents=True)
        # nginx workers drop root privileges; they must be able to reach the failing flag.
        for path in (self.prefix.parent, self.prefix, self.prefix / "tmp"):
            path.chmod(0o755)
        if self._nginx:
            self._process = self._processes.start(self.prefix.name, self._nginx_command())
        else:
            self._process = self._standin(self.prefix, self.ports, 0.0)
        for port in [*self.ports, self.slow_port] if self._echo else self.ports:
            await wait_port(port, watched=self._process)
        if self._slow_prefix and self.slow_delay is not None:
            slow = self._standin(self._slow_prefix, [self.slow_port], self.slow_delay)
            await wait_port(self.slow_port, watched=slow)
        log.info("%s receiver on ports %s, slow: %s", self.kind, self.ports, self.slow_kind)
        return self

    def _standin(self, prefix: Path, ports: list[int], delay: float) -> subprocess.Popen[bytes]:
        prefix.mkdir(parents=True, exist_ok=True)
        args = [str(prefix), f"{delay:g}", *map(str, ports)]
        return self._processes.start(prefix.name, [sys.executable, "-m", "harness.nginx", *args])

    def _nginx_command(self) -> list[str]:
        assert self._nginx is not None
        buffering = " buffer=256k flush=1s" if self._buffered else ""
        slow_server = ""
        if self._echo:
            delay = f"{self.slow_delay:g}"
            slow_server = _SLOW_SERVER.format(
                port=self.slow_port, prefix=self.prefix, buffering=buffering, delay=delay
            )
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            _NGINX_CONF.format(
                load_module=f"load_module {self._echo};\n" if self._echo else "",
                prefix=self.prefix,
                listen="".join(f"        listen 127.0.0.1:{p} backlog=4096;\n" for p in self.ports),
                log_format=NGINX_LOG_FORMAT,
                buffering=buffering,
                slow_server=slow_server,
            )
        )
        errors = str(self.prefix / "error.log")
        return [self._nginx, "-c", str(conf), "-p", str(self.prefix), "-e", errors]

    async def __aexit__(self, *exc: object) -> None:
        if self._process is not None:
            # SIGQUIT is nginx's graceful stop: buffered log lines are written first.
            sig = signal.SIGQUIT if self._nginx else signal.SIGTERM
            await self._processes.stop(self._process, grace=10, sig=sig)
        await self._processes.stop_all(grace=10)


class BlackHole:
    """Accepts connections and reads requests but never answers: a hanging endpoint."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._held: set[asyncio.StreamWriter] = set()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._held.add(writer)
        with contextlib.suppress(ConnectionError):
            await reader.read()  # until the client goes away
        self._held.discard(writer)
        writer.close()

    async def __aenter__(self) -> BlackHole:
        self._server = await asyncio.start_server(self._hold, "127.0.0.1", 0, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._held):
            writer.close()
        await self._server.wait_closed()


def _answerer(
    prefix: Path, sink: IO[str], delay: float
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def answer(request: web.Request) -> web.Response:
        started = time.monotonic()
        body = await request.read()
        if delay:
            await asyncio.sleep(delay)
        failing = request.path.startswith("/storm/") and (prefix / "failing").exists()
        status = 503 if failing else 204
        event_id = request.headers.get("Svc-Event-Id", "")
        signature = request.headers.get("Svc-Signature", "")
        took = time.monotonic() - started
        line = format_line(time.time(), status, len(body), request.path, event_id, signature, took)
        sink.write(line)
        return web.Response(status=status)

    return answer


async def standin(prefix: Path, ports: list[int], delay: float) -> None:
    """Answer on ``ports`` after ``delay`` seconds, logging every request to
    ``prefix/access.log`` as nginx would, until SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runners = []
    with (prefix / "access.log").open("a", buffering=1) as sink:
        for port in ports:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", _answerer(prefix, sink, delay))
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
            runners.append(runner)
        await stop.wait()
        for runner in runners:
            await runner.cleanup()


if __name__ == "__main__":
    prefix, delay, *ports = sys.argv[1:]
    asyncio.run(standin(Path(prefix), [int(p) for p in ports], float(delay)))
