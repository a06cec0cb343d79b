"""The benchmarks' receivers: nginx answering 204 (503 under ``/storm/`` while a flag file
exists), and a black hole. ``make bench`` and ``make test`` install nginx from Debian."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import subprocess
from pathlib import Path

from harness.ports import free_port, wait_port
from harness.processes import Processes

log = logging.getLogger(__name__)

NGINX_LOG_FORMAT = (
    "$msec $status $content_length $uri $http_svc_event_id $http_svc_signature $request_time"
)
"""One line per request, read back by ``benchmarks.receipts``."""


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
            echo_sleep {delay:g};
            echo_status 204;
        }}
    }}
"""


ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
"""nginx's echo module (``echo_sleep``), where Debian's ``libnginx-mod-http-echo`` puts it."""
SBIN = "/usr/sbin:/usr/local/sbin"
"""Where Debian puts nginx, often off a user's PATH."""


class Receiver:
    """nginx in its own process on ``ports`` ports, logging every request to one log; with
    ``slow_delay`` also slow endpoints (``slow_url``) that answer 204 after that many seconds."""

    def __init__(
        self,
        workdir: Path,
        buffered: bool,
        slow_delay: float | None = None,
        ports: int = 1,
        name: str = "receiver",
    ) -> None:
        self.prefix = workdir / name
        self.ports = [free_port() for _ in range(ports)]
        self.slow_delay = slow_delay
        self.slow_port = free_port() if slow_delay is not None else 0
        self._buffered = buffered
        nginx = shutil.which("nginx") or shutil.which("nginx", path=SBIN)
        if nginx is None:
            raise RuntimeError("nginx is missing: make bench installs it")
        self._nginx = nginx
        self._processes = Processes(workdir)

    @property
    def log_path(self) -> Path:
        return self.prefix / "access.log"

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
        """The nginx master's pid, for CPU accounting."""
        return [p.pid for p in self._processes.started]

    def version(self) -> str:
        done = subprocess.run([self._nginx, "-v"], capture_output=True, text=True, check=False)
        return done.stderr.strip().removeprefix("nginx version: ").removeprefix("nginx/")

    async def __aenter__(self) -> Receiver:
        (self.prefix / "tmp").mkdir(parents=True)
        # nginx workers drop root privileges; they must be able to reach the failing flag.
        for path in (self.prefix.parent, self.prefix, self.prefix / "tmp"):
            path.chmod(0o755)
        buffering = " buffer=256k flush=1s" if self._buffered else ""
        slow_server = ""
        if self.slow_delay is not None:
            slow_server = _SLOW_SERVER.format(
                port=self.slow_port, prefix=self.prefix, buffering=buffering, delay=self.slow_delay
            )
        conf = self.prefix / "nginx.conf"
        conf.write_text(
            _NGINX_CONF.format(
                load_module=f"load_module {ECHO_MODULE};\n" if slow_server else "",
                prefix=self.prefix,
                listen="".join(f"        listen 127.0.0.1:{p} backlog=4096;\n" for p in self.ports),
                log_format=NGINX_LOG_FORMAT,
                buffering=buffering,
                slow_server=slow_server,
            )
        )
        errors = str(self.prefix / "error.log")
        command = [self._nginx, "-c", str(conf), "-p", str(self.prefix), "-e", errors]
        process = self._processes.start(self.prefix.name, command)
        for port in [*self.ports, self.slow_port] if self.slow_delay is not None else self.ports:
            await wait_port(port, watched=process)
        log.info("nginx receiver on ports %s, slow: %s", self.ports, self.slow_port or None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        # SIGQUIT is nginx's graceful stop: buffered log lines are written first.
        await self._processes.stop_all(grace=10, sig=signal.SIGQUIT)


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
