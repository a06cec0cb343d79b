"""An endpoint's row: its columns, what is sealed in it, and the ``Endpoint`` it reads as.

Every sealed column (the current and previous signing secret, the custom headers, the client
key, a RabbitMQ destination's password) is encrypted with ``svc.crypto`` bound to the
endpoint's id, with the id of the key that sealed it in ``<column>_key_id``: a rotation moves
the current secret's ciphertext into the previous one's columns in one statement, and ``svc
secrets reencrypt`` seals each again under a new key (``Endpoints.reseal``).
"""

from __future__ import annotations

from typing import Any

import orjson

from svc.crypto import SecretBox
from svc.db.times import opt_ms, to_ms
from svc.webhooks.model import Endpoint

COLUMNS = (
    "id, org_id, env, url, events, description, secret, secret_key_id, created_at, "
    "previous_secret, previous_secret_key_id, previous_secret_expires_at, signature_scheme, "
    "rate_limit, ordered, disabled, disabled_reason, headers, headers_key_id, filter, "
    "client_certificate, client_key, client_key_key_id, server_ca, url_password, "
    "url_password_key_id"
)
SEALED = ("secret", "previous_secret", "headers", "client_key", "url_password")
"""The sealed columns, each with its ``<column>_key_id``."""


class Rows:
    """Seals and opens an endpoint's sealed columns and reads its rows."""

    def __init__(self, box: SecretBox) -> None:
        self._box = box

    @property
    def current_key(self) -> str:
        """The id of the key that seals from now on."""
        return self._box.current

    def reseal(self, row: Any, column: str) -> tuple[bytes, str] | None:
        """``column`` of ``row`` sealed again under the current key, and that key's id; None
        when it is empty or sealed under the current key already."""
        key_id = row[f"{column}_key_id"]
        if key_id is None or key_id == self._box.current:
            return None
        plain = self._box.open(key_id, bytes(row[column]), row["id"])
        sealed, new_key_id = self.seal(row["id"], plain)
        assert sealed is not None and new_key_id is not None
        return sealed, new_key_id

    def seal(self, endpoint_id: str, plain: bytes | None) -> tuple[bytes | None, str | None]:
        """``plain`` sealed for its endpoint, and the key's id (None, None: nothing)."""
        if plain is None:
            return None, None
        key_id, sealed = self._box.seal(plain, endpoint_id)
        return sealed, key_id

    def seal_headers(
        self, endpoint_id: str, headers: dict[str, str]
    ) -> tuple[bytes | None, str | None]:
        """Custom headers sealed as JSON (None, None: none)."""
        return self.seal(endpoint_id, orjson.dumps(headers) if headers else None)

    def _open(self, row: Any, column: str) -> bytes | None:
        if row[column] is None:
            return None
        return self._box.open(row[f"{column}_key_id"], bytes(row[column]), row["id"])

    def _text(self, row: Any, column: str) -> str | None:
        plain = self._open(row, column)
        return None if plain is None else plain.decode()

    def endpoint(self, row: Any) -> Endpoint:
        headers = self._open(row, "headers")
        secret = self._text(row, "secret")
        assert secret is not None
        return Endpoint(
            id=row["id"],
            org=row["org_id"],
            env=row["env"],
            url=row["url"],
            events=tuple(row["events"]),
            secret=secret,
            description=row["description"],
            created_ms=to_ms(row["created_at"]),
            previous_secret=self._text(row, "previous_secret"),
            previous_secret_expires_ms=opt_ms(row["previous_secret_expires_at"]),
            signature_scheme=row["signature_scheme"],
            rate_limit=row["rate_limit"],
            ordered=row["ordered"],
            disabled=row["disabled"],
            disabled_reason=row["disabled_reason"],
            headers={} if headers is None else orjson.loads(headers),
            filter=None if row["filter"] is None else orjson.loads(row["filter"]),
            client_certificate=row["client_certificate"],
            client_key=self._text(row, "client_key"),
            server_ca=row["server_ca"],
            url_password=self._text(row, "url_password"),
        )


def json_parameter(value: Any) -> str | None:
    """``value`` as a jsonb parameter (None stays SQL NULL)."""
    return None if value is None else orjson.dumps(value).decode()
