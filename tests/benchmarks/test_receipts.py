"""The receivers' access log as the benchmarks read it."""

from __future__ import annotations

from pathlib import Path

from benchmarks.receipts import AccessLog


def format_line(
    at: float, status: int, size: int, path: str, event_id: str, sig: str, took: float = 0.0
) -> str:
    """A log line as nginx writes it with ``harness.nginx.NGINX_LOG_FORMAT``."""
    return f"{at:.3f} {status} {size} {path} {event_id or '-'} {sig or '-'} {took:.3f}\n"


def test_all_arrived_counts_only_signed_2xx_receipts_of_the_run(tmp_path: Path) -> None:
    path = tmp_path / "access.log"
    signature = "t=1,v1=abc"
    path.write_text(
        format_line(1.0, 200, 2, "/run1/e", "evt_a", signature)
        + format_line(1.1, 503, 2, "/run1/e", "evt_b", signature)
        + format_line(1.2, 200, 2, "/run1/e", "evt_c", "")
        + format_line(1.3, 200, 2, "/run2/e", "evt_b", signature)
    )
    log = AccessLog(path)
    log.poll()
    assert log.all_arrived("run1", {"evt_a"})
    assert not log.all_arrived("run1", {"evt_a", "evt_b"})  # a 503 is not an arrival
    assert not log.all_arrived("run1", {"evt_a", "evt_c"})  # nor an unsigned 200
    assert not log.all_arrived("run3", {"evt_a"})
    assert log.all_arrived("run1", set())
    with path.open("a") as handle:
        handle.write(format_line(2.0, 204, 0, "/run1/e", "evt_b", signature))
    log.poll()
    assert log.all_arrived("run1", {"evt_a", "evt_b"})
    assert not log.all_arrived("run1", {"evt_a", "evt_x"})  # as many, not the same
