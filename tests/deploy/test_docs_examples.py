"""The receiver's verification in plain Python, as the docs show it, verifies what the
dispatcher signs and refuses what it must."""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Callable
from typing import cast

import pytest

from svc.signing import Signer
from tests.deploy.tools import ROOT

PAGE = ROOT / "docs" / "receiving" / "verifying.md"
BODY = b'{"id":"evt_1","type":"payment.succeeded","data":{"id":"pay_1"}}'

Verify = Callable[[str, bytes, str], None]


def the_example(tab: str) -> str:
    """The Python code block of the page's tab ``tab``."""
    text = PAGE.read_text()
    section = text.split(f"/// tab | {tab}\n", 1)[1].split("\n///\n", 1)[0]
    found = re.search(r"```python\n(.*?)\n\s*```", section, re.S)
    assert found is not None, f"no Python example under {tab!r}"
    return textwrap.dedent(found.group(1))


@pytest.fixture(scope="module")
def verify() -> Verify:
    namespace: dict[str, object] = {}
    exec(the_example("Standard library"), namespace)
    assert callable(namespace["verify"])
    return cast(Verify, namespace["verify"])


def test_it_verifies_a_delivery_and_both_signatures_of_a_rotation(verify: Verify) -> None:
    now = int(time.time())
    verify(Signer("whsec_new").header(BODY, now), BODY, "whsec_new")
    rotated = f"t={now},v1={Signer('whsec_new').digest(BODY, now)}"
    rotated += f",v1={Signer('whsec_old').digest(BODY, now)}"
    verify(rotated, BODY, "whsec_new")
    verify(rotated, BODY, "whsec_old")


@pytest.mark.parametrize(
    ("header", "body", "secret"),
    [
        pytest.param(lambda now: Signer("whsec_a").header(BODY, now), BODY, "whsec_b", id="secret"),
        pytest.param(
            lambda now: Signer("whsec_a").header(BODY, now), BODY + b" ", "whsec_a", id="body"
        ),
        pytest.param(
            lambda now: Signer("whsec_a").header(BODY, now - 300), BODY, "whsec_a", id="stale"
        ),
        pytest.param(
            lambda now: f"v1={Signer('whsec_a').digest(BODY, now)}", BODY, "whsec_a", id="no-t"
        ),
        pytest.param(lambda now: "", BODY, "whsec_a", id="empty"),
    ],
)
def test_it_refuses(verify: Verify, header: Callable[[int], str], body: bytes, secret: str) -> None:
    with pytest.raises(ValueError):
        verify(header(int(time.time())), body, secret)
