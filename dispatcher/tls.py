"""The TLS context of an endpoint with a client certificate or a CA bundle of its own (mTLS).

Python's ``ssl`` loads a certificate chain and its key only from files, so they are written to
a file in a fresh directory only this process may read (0700, the file 0600), loaded, and
removed at once; the CA bundle loads from memory. Everything else is the default client
context: certificate and host name checked, the system's CAs unless ``server_ca`` replaces
them. One context is made per endpoint when its scope is loaded into the dispatcher's cache,
and aiohttp keeps connections made with it apart from every other endpoint's.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from pathlib import Path

from svc.webhooks.model import Endpoint


def context_of(endpoint: Endpoint) -> ssl.SSLContext | None:
    """The endpoint's own TLS context, or None when it has neither a client certificate nor
    a CA bundle (the session's default context serves it)."""
    if endpoint.client_certificate is None and endpoint.server_ca is None:
        return None
    context = ssl.create_default_context(cadata=endpoint.server_ca)
    if endpoint.client_certificate is not None and endpoint.client_key is not None:
        with tempfile.TemporaryDirectory(prefix="svc-tls-") as folder:
            path = Path(folder) / "client.pem"
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(endpoint.client_certificate + "\n" + endpoint.client_key)
            context.load_cert_chain(path)
    return context
