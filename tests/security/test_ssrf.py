"""Private IPv4 addresses wrapped in IPv6 are refused as delivery targets: IPv4-mapped,
IPv4-compatible, NAT64, 6to4, Teredo and site-local forms, as URL literals when an endpoint is
created or changed and before sending, and as the addresses a host name resolves to; public
addresses in the same forms stay allowed. The delivery log tells the endpoint's owner the
same of a name that resolves only to refused addresses and of one that does not resolve, so
nobody can map internal names through it."""

from __future__ import annotations

import socket
from typing import cast

import aiohttp
import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from dispatcher.endpoints import EndpointCache
from dispatcher.errors import BlockedAddress
from dispatcher.guard import GuardedResolver
from dispatcher.sender import Result, Sender
from harness.receivers import Receiver
from svc.addresses import always_blocked, is_public
from svc.context import Context
from svc.events.flow import emit
from svc.settings import Settings
from svc.webhooks.store import Endpoints
from tests.conftest import Api
from tests.integration.test_private_targets import first_delivery
from tests.unit.test_blocked_targets import JOB, OneEndpoint
from tests.unit.test_guard import FixedResolver

METADATA = "169.254.169.254"

REFUSED = [
    # IPv4-mapped (::ffff:0:0/96)
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "::ffff:10.0.0.1",
    # IPv4-compatible (::/96, deprecated): refused whatever it embeds
    "::a9fe:a9fe",
    "::7f00:1",
    "::808:808",
    # IPv4-translated (::ffff:0:0:0/96)
    "::ffff:0:a9fe:a9fe",
    # NAT64, well-known prefix (64:ff9b::/96)
    "64:ff9b::a9fe:a9fe",
    "64:ff9b::169.254.169.254",
    "64:ff9b::7f00:1",
    "64:ff9b::a00:1",
    "64:ff9b::c0a8:101",
    "64:ff9b::6440:1",
    # NAT64, local-use prefix (64:ff9b:1::/48): refused whatever it embeds
    "64:ff9b:1::a9fe:a9fe",
    "64:ff9b:1:a9fe:a9:fe00::",
    "64:ff9b:1::808:808",
    # 6to4 (2002::/16)
    "2002:a9fe:a9fe::1",
    "2002:7f00:1::1",
    "2002:a00:1:1::1",
    "2002:c0a8:101::1",
    # Teredo (2001::/32; server in bits 32-63, client inverted in the last 32): refused
    # whatever it embeds
    "2001:0:808:808:0:0:5601:5601",
    "2001:0:a9fe:a9fe:0:0:f7f7:f7f7",
    "2001:0:808:808:0:0:f7f7:f7f7",
    # Site-local (fec0::/10, deprecated)
    "fec0::1",
    "fec0::a9fe:a9fe",
    "feff::1",
]

PUBLIC = [
    "8.8.8.8",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "64:ff9b::8.8.8.8",
    "64:ff9b::101:101",
    "2002:808:808::1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:80b::200e",
]


@pytest.mark.parametrize("address", REFUSED)
def test_private_ipv4_wrapped_in_ipv6_is_not_public(address: str) -> None:
    assert not is_public(address)
    assert always_blocked(f"[{address}]") and always_blocked(address)


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_in_the_same_forms_stay_allowed(address: str) -> None:
    assert is_public(address)
    assert not always_blocked(f"[{address}]" if ":" in address else address)


@pytest.mark.parametrize("address", REFUSED)
async def test_a_name_resolving_to_a_wrapped_private_address_is_refused(address: str) -> None:
    with pytest.raises(BlockedAddress):
        await GuardedResolver(FixedResolver(address)).resolve("hooks.example", 443)


async def test_a_name_resolving_also_to_a_public_form_keeps_only_that() -> None:
    resolver = GuardedResolver(FixedResolver("64:ff9b::a9fe:a9fe", "64:ff9b::808:808"))
    found = await resolver.resolve("mixed.example", 443)
    assert [r["host"] for r in found] == ["64:ff9b::808:808"]


@pytest.mark.settings(allow_private_targets=False)
@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2002:a9fe:a9fe::1]/hook",
        "https://[::ffff:a9fe:a9fe]/",
        "https://[fec0::1]:8443/",
        "https://[2001:0:808:808::5601:5601]/",
        "amqp://shop:pw@[::ffff:a9fe:a9fe]/?exchange=payments",
        "amqps://[fec0::1]:5671/shop?exchange=payments",
    ],
)
async def test_an_endpoint_on_a_wrapped_private_address_is_refused(api: Api, url: str) -> None:
    status, body = await api.call(
        "POST", "/v1/webhook_endpoints", json={"url": url, "events": ["payment.created"]}
    )
    assert status == 422, body
    assert isinstance(body, dict) and body["code"] == "validation_error"
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("url", "private_target")]
    endpoint = await api.endpoint("https://hooks.example.com/a", ["payment.created"])
    status, body = await api.call(
        "PATCH", f"/v1/webhook_endpoints/{endpoint['id']}", json={"url": url}
    )
    assert status == 422, body
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("url", "private_target")]


@pytest.mark.settings(allow_private_targets=False)
async def test_an_endpoint_on_a_public_nat64_address_is_accepted(api: Api) -> None:
    await api.endpoint("https://[64:ff9b::808:808]/hooks", ["payment.created"])


def _name_of_this_machine() -> str:
    """A host name (not ``localhost``) that resolves only to this machine's own, non-public
    addresses."""
    name = socket.gethostname()
    addresses = {info[4][0] for info in socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)}
    assert addresses and not any(is_public(str(a)) for a in addresses), addresses
    assert not always_blocked(name)
    return name


@pytest.mark.settings(allow_private_targets=False)
async def test_a_refused_address_and_a_failed_look_up_read_alike_in_the_delivery_log(
    api: Api, ctx: Context, receiver: Receiver
) -> None:
    """Endpoints stored directly (as an old row would be): one on a name that resolves to a
    private address of this machine, one on a name that does not resolve."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    records = {}
    for host in (_name_of_this_machine(), "nowhere.invalid"):
        url = receiver.url("/private").replace("127.0.0.1", host)
        endpoint = await ctx.endpoints.create(ctx.db, scope, url, ["payment.created"])
        records[host] = endpoint.id
    await emit(
        ctx,
        scope.org,
        scope.env,
        "payment.created",
        {"id": "pay_p", "status": "pending", "amount": 1},
    )
    seen = {host: await first_delivery(api, endpoint_id) for host, endpoint_id in records.items()}
    shown = [
        (r["outcome"], r["error"].replace(host, "HOST"), r["status_code"], r["response_body"])
        for host, r in seen.items()
    ]
    assert shown[0] == shown[1] == ("dns", "could not resolve HOST", None, ""), shown
    assert receiver.received == []


class FailingResolver(FixedResolver):
    """A resolver whose look-ups fail, as for a name that does not exist."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


async def _attempt(resolver: AbstractResolver) -> Result:
    cache = EndpointCache(cast(Endpoints, OneEndpoint("https://hooks.example/a")), ttl=60)
    target = await cache.get("org_1", "test", "we_1")
    assert target is not None
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(resolver))
    async with aiohttp.ClientSession(connector=connector) as session:
        return await Sender(session, Settings(allow_private_targets=False)).send(target, JOB)


async def test_the_operator_still_tells_them_apart() -> None:
    """The attempt's own outcome (metrics, spans) says ``blocked`` for a refused address and
    ``dns`` for a failed look-up; what the delivery log records of them is alike."""
    refused = await _attempt(FixedResolver("64:ff9b::a9fe:a9fe"))
    failed = await _attempt(FailingResolver())
    assert (refused.outcome, failed.outcome) == ("blocked", "dns")
    assert (refused.logged_outcome, refused.error) == (failed.logged_outcome, failed.error)
    assert (failed.logged_outcome, failed.error) == ("dns", "could not resolve hooks.example")


@pytest.mark.settings(allow_private_targets=False)
async def test_a_rabbitmq_destination_is_checked_like_an_http_one(api: Api, ctx: Context) -> None:
    """A broker's name resolving only to private addresses and one that does not resolve read
    alike in the log, and no connection is made (the broker's address is checked before)."""
    scope = await ctx.api_keys.resolve(api.key)
    assert scope is not None
    records = {}
    for host in (_name_of_this_machine(), "nowhere.invalid"):
        url = f"amqp://guest:guest@{host}:5672/?exchange=payments"
        endpoint = await ctx.endpoints.create(ctx.db, scope, url, ["payment.created"])
        records[host] = endpoint.id
    data = {"id": "pay_b", "status": "pending", "amount": 1}
    await emit(ctx, scope.org, scope.env, "payment.created", data)
    seen = {host: await first_delivery(api, endpoint_id) for host, endpoint_id in records.items()}
    shown = [(r["outcome"], r["error"].replace(host, "HOST")) for host, r in seen.items()]
    assert shown[0] == shown[1] == ("dns", "could not resolve HOST"), shown
