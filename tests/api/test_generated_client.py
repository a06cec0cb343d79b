"""A client generated from the description with openapi-python-client works against the API."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from api.description import document
from svc.context import Context
from svc.settings import Settings
from tests.conftest import Running

PACKAGE = "svc_generated_client"
APPROVED_AMOUNT = 2450  # the simulation terminal approves amounts not ending in 01–04 Rappen


class Generated:
    """The generated package, with its modules reachable by dotted name."""

    def __init__(self, package: str) -> None:
        self.package = package

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{name}")

    @property
    def models(self) -> Any:
        return self.module("models")

    def client(self, base_url: str, key: str) -> Any:
        import httpx

        # Long polls hold for up to 30 s; httpx's default timeout is 5 s.
        return self.module("client").AuthenticatedClient(
            base_url=base_url, token=key, timeout=httpx.Timeout(40.0)
        )


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Fast simulation terminal steps."""
    return replace(settings, terminal_step_delay=0.05)


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Generated]:
    """Generate the client into a temporary directory and make it importable."""
    root = tmp_path_factory.mktemp("generated")
    spec = root / "openapi.json"
    spec.write_text(json.dumps(document()))
    config = root / "config.json"
    config.write_text(json.dumps({"post_hooks": []}))
    generator = Path(sys.executable).with_name("openapi-python-client")
    result = subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(spec),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(root / PACKAGE),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sys.path.insert(0, str(root))
    try:
        yield Generated(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


async def test_generated_client_creates_and_reads_a_webhook_endpoint(
    generated: Generated, service: Running, ctx: Context
) -> None:
    key, _ = await ctx.api_keys.create("test", "generated-client")
    models = generated.models
    create = generated.module("api.webhook_endpoints.create_webhook_endpoint")
    read = generated.module("api.webhook_endpoints.read_webhook_endpoint")
    async with generated.client(service.base_url, key) as client:
        body = models.WebhookEndpointCreate(
            url="https://shop.example/hooks", events=[models.EventType.PAYMENT_SUCCEEDED]
        )
        created = await create.asyncio(client=client, body=body)
        assert isinstance(created, models.WebhookEndpointCreated), created
        assert created.secret.startswith("whsec_")
        assert created.id.startswith("we_")

        endpoint = await read.asyncio(endpoint_id=created.id, client=client)
        assert isinstance(endpoint, models.WebhookEndpoint), endpoint
        assert endpoint.url == "https://shop.example/hooks"
        assert endpoint.events == [models.EventType.PAYMENT_SUCCEEDED]
        assert not hasattr(endpoint, "secret")

        missing = await read.asyncio(endpoint_id="we_" + "0" * 26, client=client)
        assert isinstance(missing, models.Problem), missing
        assert missing.code == "endpoint_not_found"


async def test_generated_client_long_polls_a_terminal_payment_to_succeeded(
    generated: Generated, service: Running, ctx: Context
) -> None:
    key, _ = await ctx.api_keys.create("test", "generated-client-terminal")
    models = generated.models
    list_terminals = generated.module("api.terminals.list_terminals")
    create_payment = generated.module("api.terminals.create_terminal_payment")
    read_payment = generated.module("api.payments.read_payment")
    async with generated.client(service.base_url, key) as client:
        terminals = await list_terminals.asyncio(client=client)
        assert isinstance(terminals, models.TerminalList), terminals
        simulated = [t for t in terminals.data if t.simulated]
        assert len(simulated) == 1, terminals
        terminal = simulated[0]
        assert terminal.status == models.TerminalStatus.ONLINE

        started = await create_payment.asyncio(
            terminal_id=terminal.id,
            client=client,
            body=models.TerminalPaymentCreate(amount=APPROVED_AMOUNT, tip_prompt=True),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(started, models.Payment), started
        assert started.status == models.PaymentStatus.PENDING
        assert started.channel == models.PaymentChannel.TERMINAL
        assert started.terminal_id == terminal.id

        final = await read_payment.asyncio(payment_id=started.id, client=client, wait=30)
        assert isinstance(final, models.Payment), final
        assert final.status == models.PaymentStatus.SUCCEEDED
        assert final.amount == APPROVED_AMOUNT
        assert final.tip > 0
        assert final.total_amount == APPROVED_AMOUNT + final.tip

        too_long = await read_payment.asyncio(payment_id=started.id, client=client, wait=31)
        assert isinstance(too_long, models.Problem), too_long
        assert [error.field for error in too_long.errors] == ["wait"]


async def test_generated_client_refunds_a_payment_and_reads_the_balance(
    generated: Generated, service: Running, ctx: Context
) -> None:
    import httpx

    key, _ = await ctx.api_keys.create("test", "generated-client-refund")
    models = generated.models
    create_payment = generated.module("api.payments.create_payment")
    create_refund = generated.module("api.refunds_and_chargebacks.create_refund")
    read_refund = generated.module("api.refunds_and_chargebacks.read_refund")
    list_refunds = generated.module("api.refunds_and_chargebacks.list_payment_refunds")
    read_balance = generated.module("api.balance_and_payouts.read_balance")
    async with generated.client(service.base_url, key) as client:
        payment = await create_payment.asyncio(
            client=client,
            body=models.PaymentCreate(amount=APPROVED_AMOUNT, success_url="https://shop.example/"),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(payment, models.Payment), payment
        async with httpx.AsyncClient() as browser:  # the customer pays on the checkout page
            paid = await browser.post(payment.checkout_url, data={"action": "pay"})
            assert paid.status_code == 303

        refund = await create_refund.asyncio(
            payment_id=payment.id,
            client=client,
            body=models.RefundCreate(amount=1000),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(refund, models.Refund), refund
        assert refund.status == models.RefundStatus.PENDING and refund.amount == 1000
        settled = await read_refund.asyncio(refund_id=refund.id, client=client)
        assert isinstance(settled, models.Refund), settled
        assert settled.status == models.RefundStatus.SUCCEEDED
        assert settled.payment_id == payment.id

        rest = await create_refund.asyncio(
            payment_id=payment.id, client=client, idempotency_key=str(uuid.uuid4())
        )
        assert isinstance(rest, models.Refund) and rest.amount == APPROVED_AMOUNT - 1000
        listed = await list_refunds.asyncio(payment_id=payment.id, client=client)
        assert isinstance(listed, models.RefundList), listed
        assert [r.id for r in listed.data] == [rest.id, refund.id]

        too_much = await create_refund.asyncio(
            payment_id=payment.id,
            client=client,
            body=models.RefundCreate(amount=1),
            idempotency_key=str(uuid.uuid4()),
        )
        assert isinstance(too_much, models.Problem), too_much
        assert [(e.field, e.code) for e in too_much.errors] == [("amount", "exceeds_refundable")]

        balance = await read_balance.asyncio(client=client)
        assert isinstance(balance, models.Balance), balance
        assert [(b.amount, b.currency) for b in balance.available] == [(0, "CHF")]
