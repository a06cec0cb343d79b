"""The terminal protocol: JSON text messages on the device WebSocket ``/terminal/v1/connect``.

A terminal connects with ``Authorization: Bearer trmsec_…`` (its device secret); while the
connection is open the terminal is online. Messages are JSON objects with a ``type``.

Service → terminal:
  ``{"type": "welcome", "terminal_id"}``                   once, after the connection opens
  ``{"type": "payment.start", "payment_id", "amount", "currency", "tip_prompt"}``
  ``{"type": "payment.cancel", "payment_id"}``             stop working on that payment
  ``{"type": "error", "code", "detail"}``                  a message of the terminal was refused

Terminal → service (``payment_id`` is the payment of the last ``payment.start``):
  ``{"type": "progress", "payment_id", "step"}``           step: one of ``STEPS``
  ``{"type": "authorized", "payment_id", "tip"}``          amount reserved; tip in Rappen (≥ 0)
  ``{"type": "succeeded", "payment_id"}``                  captured
  ``{"type": "failed", "payment_id", "reason"}``           declined or failed
  ``{"type": "canceled", "payment_id", "reason"}``         aborted on the terminal
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

STEPS: tuple[str, ...] = ("waiting_for_card", "tip_selection", "pin_entry", "processing")
RESULTS: dict[str, str] = {
    "authorized": "authorized",
    "succeeded": "succeeded",
    "failed": "failed",
    "canceled": "canceled",
}
"""Terminal message type → payment status it reports."""
DEVICE_PATH = "/terminal/v1/connect"
"""Where a terminal device opens its WebSocket on the API."""
MAX_TIP = 99_999_999
_REASON = re.compile(r"[a-z][a-z0-9_]{0,63}")


class ProtocolError(ValueError):
    """A terminal message that does not follow the protocol; ``code`` says how."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


@dataclass(frozen=True, slots=True)
class FromTerminal:
    """A checked message from a terminal."""

    type: str
    payment_id: str
    step: str = ""
    tip: int = 0
    reason: str = ""


def parse(raw: str | bytes) -> FromTerminal:
    """Check one message from a terminal; raises ProtocolError."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ProtocolError("invalid_json", "Messages are JSON objects.") from None
    if not isinstance(data, dict):
        raise ProtocolError("invalid_json", "Messages are JSON objects.")
    kind = data.get("type")
    payment_id = data.get("payment_id")
    if kind != "progress" and kind not in RESULTS:
        raise ProtocolError("unknown_type", f"Unknown message type {kind!r}.")
    if not isinstance(payment_id, str) or not payment_id:
        raise ProtocolError("invalid_field", "payment_id is required.")
    if kind == "progress":
        step = data.get("step")
        if step not in STEPS:
            raise ProtocolError("invalid_field", f"step must be one of {', '.join(STEPS)}.")
        return FromTerminal("progress", payment_id, step=str(step))
    if kind == "authorized":
        tip = data.get("tip", 0)
        if not isinstance(tip, int) or isinstance(tip, bool) or not 0 <= tip <= MAX_TIP:
            raise ProtocolError("invalid_field", "tip is an integer number of Rappen (≥ 0).")
        return FromTerminal("authorized", payment_id, tip=tip)
    reason = data.get("reason", "")
    if kind in ("failed", "canceled") and not (
        isinstance(reason, str) and _REASON.fullmatch(reason)
    ):
        raise ProtocolError("invalid_field", "reason is a snake_case code.")
    return FromTerminal(str(kind), payment_id, reason=str(reason))


def encode(message: dict[str, Any]) -> str:
    return orjson.dumps(message).decode()


def welcome(terminal_id: str) -> str:
    return encode({"type": "welcome", "terminal_id": terminal_id})


def start(payment_id: str, amount: int, currency: str, tip_prompt: bool) -> str:
    return encode(
        {
            "type": "payment.start",
            "payment_id": payment_id,
            "amount": amount,
            "currency": currency,
            "tip_prompt": tip_prompt,
        }
    )


def cancel(payment_id: str) -> str:
    return encode({"type": "payment.cancel", "payment_id": payment_id})


def error(code: str, detail: str) -> str:
    return encode({"type": "error", "code": code, "detail": detail})
