"""The receivers: Debian nginx answering 204 (503 under ``/storm/`` while a flag file exists),
a Python stand-in with the same log when nginx is not installed, and a black hole that never
answers (the hanging endpoints of the isolation run).

A receiver may also serve slow endpoints on a further port, answering 204 after a delay: in
the same nginx with the echo module (``echo_sleep``, Debian's ``libnginx-mod-http-echo``), or
in the stand-in. And it may listen on several ports at once (the wide fan-out spreads its
endpoints over them), all logging to its one log.

The stand-in is this module run as ``python -m harness.nginx PREFIX SLOW_PORT DELAY PORT...``
(logs to ``PREFIX/access.log``; ``SLOW_PORT`` answers ``DELAY`` seconds after each request,
0 for none). Where nginx lacks the echo module, a stand-in of its own serves the slow port.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
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
master_process on;
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


def find_nginx() -> str | None:
    """The nginx binary: on PATH, or where Debian puts it (often off a user's PATH)."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None
    )


def find_echo_module() -> str | None:
    """nginx's echo module (``echo_sleep``), where Debian's ``libnginx-mod-http-echo`` puts it."""
    return next((p for p in ECHO_MODULES if os.path.isfile(p)), None)


class Receiver:
    """A fast receiver in its own process, logging every request to ``log_path``; with
    ``slow_delay`` also slow endpoints (``slow_url``) that answer 204 after that many seconds."""

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
        self.port = self.ports[0]
        self.slow_delay = slow_delay
        self.slow_port = free_port() if slow_delay is not None else 0
        self._buffered = buffered
        self._nginx = find_nginx() if prefer_nginx else None
        self._echo = find_echo_module() if self._nginx else None
        self._process: subprocess.Popen[bytes] | None = None
        self._processes = Processes(workdir)

    @property
    def kind(self) -> str:
        return "nginx" if self._nginx else "aiohttp"

    @property
    def slow_in_nginx(self) -> bool:
        """Whether nginx serves the slow endpoints (else a stand-in does)."""
        return self.slow_delay is not None and self._echo is not None

    @property
    def slow_apart(self) -> bool:
        """Whether a stand-in of its own serves the slow endpoints beside nginx."""
        return self.slow_delay is not None and self._nginx is not None and self._echo is None

    @property
    def slow_kind(self) -> str | None:
        """What answers the slow endpoints, for the results."""
        if self.slow_delay is None:
            return None
        if self.slow_in_nginx:
            return f"nginx echo module, echo_sleep {self.slow_delay:g}"
        return f"aiohttp stand-in, asyncio.sleep({self.slow_delay:g})"

    @property
    def log_path(self) -> Path:
        return self.prefix / "access.log"

    @property
    def slow_prefix(self) -> Path:
        return self.prefix.parent / "receiver-slow"

    @property
    def log_paths(self) -> list[Path]:
        """Every log the receiver writes (a slow stand-in beside nginx keeps its own)."""
        return [self.log_path, *([self.slow_prefix / "access.log"] if self.slow_apart else [])]

    def url(self, path: str, port: int = 0) -> str:
        """A URL of the fast endpoints on the receiver's ``port``-th port (the first by
        default)."""
        return f"http://127.0.0.1:{self.ports[port]}{path}"

    def slow_url(self, path: str) -> str:
        """A URL of the slow endpoints (answered after ``slow_delay`` seconds)."""
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
        slow = [self.slow_port] if self.slow_delay is not None else []
        if self._nginx:
            command = self._nginx_command()
        else:
            delay = self.slow_delay or 0.0
            command = _standin_command(self.prefix, self.ports, self.slow_port, delay)
        self._process = self._processes.start(self.prefix.name, command)
        for port in [*self.ports, *slow] if not self.slow_apart else self.ports:
            await wait_port(port, watched=self._process)
        log.info("%s receiver on ports %s", self.kind, ", ".join(map(str, self.ports)))
        if self.slow_apart:
            self.slow_prefix.mkdir(parents=True)
            assert self.slow_delay is not None
            command = _standin_command(self.slow_prefix, [], self.slow_port, self.slow_delay)
            await wait_port(self.slow_port, watched=self._processes.start("slow", command))
        if slow:
            log.info("slow receiver (%s) on port %d", self.slow_kind, self.slow_port)
        return self

    def _nginx_command(self) -> list[str]:
        assert self._nginx is not None
        conf = self.prefix / "nginx.conf"
        buffering = " buffer=256k flush=1s" if self._buffered else ""
        slow_server = ""
        if self.slow_in_nginx:
            slow_server = _SLOW_SERVER.format(
                port=self.slow_port,
                prefix=self.prefix,
                buffering=buffering,
                delay=f"{self.slow_delay:g}",
            )
        conf.write_text(
            _NGINX_CONF.format(
                load_module=f"load_module {self._echo};\n" if self.slow_in_nginx else "",
                prefix=self.prefix,
                listen="".join(
                    f"        listen 127.0.0.1:{port} backlog=4096;\n" for port in self.ports
                ),
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


def _standin_command(prefix: Path, ports: list[int], slow_port: int, delay: float) -> list[str]:
    """The stand-in serving ``ports`` (and ``slow_port`` after ``delay``), logging in ``prefix``."""
    numbers = [str(slow_port), f"{delay:g}", *map(str, ports)]
    return [sys.executable, "-m", "harness.nginx", str(prefix), *numbers]


class BlackHole:
    """Accepts connections and reads requests but never answers: a hanging endpoint."""

    def __init__(self) -> None:
        self.port = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._held: set[asyncio.StreamWriter] = set()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def _hold(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._held.add(writer)
        try:
            while await reader.read(65536):
                pass
        except ConnectionError:
            pass
        finally:
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


SINK = web.AppKey("sink", IO[str])
PREFIX = web.AppKey("prefix", Path)
DELAY = web.AppKey("delay", float)


async def _answer(request: web.Request) -> web.Response:
    started = time.monotonic()
    body = await request.read()
    if request.app[DELAY]:
        await asyncio.sleep(request.app[DELAY])
    failing = request.path.startswith("/storm/") and (request.app[PREFIX] / "failing").exists()
    status = 503 if failing else 204
    request.app[SINK].write(
        format_line(
            time.time(),
            status,
            len(body),
            request.path,
            request.headers.get("Svc-Event-Id", ""),
            request.headers.get("Svc-Signature", ""),
            time.monotonic() - started,
        )
    )
    return web.Response(status=status)


async def standin(prefix: Path, ports: list[int], slow_port: int, delay: float) -> None:
    """Answer on ``ports`` at once and on ``slow_port`` (if not 0) after ``delay`` seconds,
    logging every request to ``prefix/access.log`` as nginx would, until SIGTERM."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    served = [(port, 0.0) for port in ports] + ([(slow_port, delay)] if slow_port else [])
    runners = []
    with (prefix / "access.log").open("a", buffering=1) as sink:
        for port, wait in served:
            app = web.Application()
            app[SINK] = sink
            app[PREFIX] = prefix
            app[DELAY] = wait
            app.router.add_route("*", "/{tail:.*}", _answer)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port, backlog=4096).start()
            runners.append(runner)
        await stop.wait()
        for runner in runners:
            await runner.cleanup()


if __name__ == "__main__":
    prefix, slow_port, delay, *ports = sys.argv[1:]
    asyncio.run(standin(Path(prefix), [int(p) for p in ports], int(slow_port), float(delay)))
