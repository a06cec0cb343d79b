"""What one machine allows the long-poll run: open files and ephemeral ports for its
connections, and a process's resident memory and open-files limit as ``/proc`` reports them."""

from __future__ import annotations

import resource
from pathlib import Path

FD_MARGIN = 1024
"""File descriptors beyond one per connection: pools, logs, pipes."""


def rss_mib(pid: int) -> float:
    """The VmRSS of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for {pid}")


def open_files_limit(pid: int) -> int:
    """The soft limit of open files of ``pid`` (from ``/proc/<pid>/limits``)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return -1 if soft == "unlimited" else int(soft)
    raise RuntimeError(f"no open-files limit for {pid}")


def raise_limits(connections: int) -> dict[str, int]:
    """Raise this process's soft limit of open files so it, and every process it starts from
    now on (the API, the clients), can hold ``connections`` sockets; check the ephemeral port
    range has room for them. Raises RuntimeError when the machine cannot."""
    needed = connections + FD_MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise RuntimeError(f"open files: hard limit {hard} < {needed} needed")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    if high - low + 1 < needed:
        raise RuntimeError(f"ephemeral ports {low}-{high}: fewer than {needed} needed")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return {"open_files_soft": soft, "open_files_hard": hard, "ephemeral_ports": high - low + 1}
