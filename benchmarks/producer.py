"""A synchronous paced producer for the baselines whose clients are synchronous (Celery, Dramatiq).

Runs in its own process: ``TARGETS_JSON COUNT RATE CREATED_OUT``. Targets are
``[{"url": ..., "secret": ...}, ...]``; each sent event's id and creation time (unix ms) are
written to ``CREATED_OUT`` as tab-separated lines.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.workload import payment_event

Send = Callable[[str, str, str, str], None]
"""``send(url, secret, body text, event id)`` enqueues one delivery."""


def produce(argv: list[str], send: Send, close: Callable[[], None] | None = None) -> None:
    targets_path, count_text, rate_text, created_path = argv
    targets = json.loads(Path(targets_path).read_text())
    count, rate = int(count_text), float(rate_text)
    lines = []
    started = time.monotonic()
    for seq in range(count):
        if rate > 0:
            delay = started + seq / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        event = payment_event(seq)
        target = targets[seq % len(targets)]
        send(target["url"], target["secret"], event.body.decode(), event.id)
        lines.append(f"{event.id}\t{event.created_ms}\n")
    if close is not None:
        close()  # flush whatever the client still buffers before the process ends
    Path(created_path).write_text("".join(lines))
