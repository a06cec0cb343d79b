"""``svc.amqp.batch_publish`` writes aiormq's channel state as aiormq's own ``basic_publish``
does (its lock, confirm numbering, confirmations, map of message ids for returns and write
queue), and relies on how aiormq settles confirms and returns. This test fails when any of
that aiormq code changes: read the module against the new code, then add its digests here."""

from __future__ import annotations

import hashlib
import inspect
from importlib.metadata import version

import aiormq
from aiormq.abc import ChannelFrame

MIRRORED = (
    aiormq.Channel.basic_publish,
    aiormq.Channel._on_return_frame,
    aiormq.Channel._confirm_delivery,
    aiormq.Channel._on_confirm_frame,
    ChannelFrame.marshall,
)
"""The aiormq code ``batch_publish`` mirrors or depends on."""
READ = {
    # aiormq 6.8.0, the floor of pyproject.toml
    ("7ba5c121b09d1201", "f5d69cc1abbbcd40", "0728785506f2dadf", "0b1898e2d2b38ab1",
     "dd2637fcd6f88ad1"),
    # aiormq 7.2.4
    ("4c5c91a4d75be291", "f5d69cc1abbbcd40", "191bcd75b78f2ed1", "0b1898e2d2b38ab1",
     "3f726b14412d93d1"),
}  # fmt: skip
"""Digests of ``MIRRORED`` in the aiormq releases ``batch_publish`` was read against."""


def _digest(code: object) -> str:
    return hashlib.sha256(inspect.getsource(code).encode()).hexdigest()[:16]  # type: ignore[arg-type]


def test_batch_publish_was_read_against_this_aiormq() -> None:
    found = tuple(map(_digest, MIRRORED))
    assert found in READ, (
        f"aiormq {version('aiormq')} changed code that svc.amqp.batch_publish mirrors: "
        f"read the module against it, then add {found} to READ"
    )


def test_the_channel_state_it_writes_is_still_there() -> None:
    names = ("lock", "delivery_tag", "confirmations", "message_id_delivery_tag", "write_queue")
    source = inspect.getsource(aiormq.Channel)
    assert all(f"self.{name}" in source for name in names)
