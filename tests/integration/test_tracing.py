"""Traces: one trace links the API request, the event's publish and its delivery attempt,
through the ``traceparent`` header of the AMQP messages; off, no span is made."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import aiohttp
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from api.app import build_app
from dispatcher.service import run as run_dispatcher
from harness.cleanup import delete_namespace
from harness.ports import wait_ready
from harness.receivers import Receiver
from svc.amqp.delivery_jobs import DeliveryJob
from svc.amqp.messages import event_message
from svc.context import Context, open_context
from svc.envelope import new_event
from svc.http import serve
from svc.settings import Settings
from svc.tracing import TRACEPARENT, Tracing
from tests.conftest import Api
from tests.integration.test_idempotency import BODY, FORM, post_raw


@pytest.fixture
async def traced(settings: Settings) -> AsyncIterator[tuple[Context, InMemorySpanExporter]]:
    """The API and a dispatcher in this process, their spans kept in memory."""
    exporter = InMemorySpanExporter()
    tracing = Tracing(
        SimpleSpanProcessor(exporter), "svc", settings.otel_sampler, settings.otel_sampler_arg
    )
    async with open_context(settings, tracing=tracing) as ctx:
        stop = asyncio.Event()
        app = build_app(ctx)
        roles = [
            asyncio.create_task(serve(app, "127.0.0.1", settings.http_port, stop, 5)),
            asyncio.create_task(run_dispatcher(ctx, stop)),
        ]
        try:
            await wait_ready(f"http://127.0.0.1:{settings.http_port}/health")
            yield ctx, exporter
        finally:
            stop.set()
            await asyncio.wait_for(asyncio.gather(*roles), 20)
    await delete_namespace(settings)


def _one(spans: list[ReadableSpan], kind: SpanKind, name: str) -> ReadableSpan:
    found = [s for s in spans if s.kind == kind and s.name == name]
    assert len(found) == 1, [(s.name, s.kind) for s in spans]
    return found[0]


async def test_one_trace_from_request_to_delivery(
    traced: tuple[Context, InMemorySpanExporter], settings: Settings, receiver: Receiver
) -> None:
    ctx, exporter = traced
    key, _ = await ctx.api_keys.create("test", "traced")
    base = f"http://127.0.0.1:{settings.http_port}"
    async with aiohttp.ClientSession(base_url=base) as session:
        api = Api(session, key)
        await api.endpoint(receiver.url("/traced"), ["payment.created"])
        status, _, _ = await post_raw(api, uuid.uuid4().hex)
        assert status == 201
    await receiver.wait_for(lambda r: len(r) >= 1)
    for _ in range(100):
        spans = list(exporter.get_finished_spans())
        if any(s.kind == SpanKind.CLIENT for s in spans):
            break
        await asyncio.sleep(0.05)

    request = _one(spans, SpanKind.SERVER, "POST /v1/payments")
    publish = _one(spans, SpanKind.PRODUCER, "publish payment.created")
    delivery = _one(spans, SpanKind.CLIENT, "deliver payment.created")
    assert request.context is not None and publish.context is not None
    assert delivery.context is not None
    trace_id = request.context.trace_id
    assert publish.context.trace_id == trace_id == delivery.context.trace_id
    assert publish.parent is not None and publish.parent.span_id == request.context.span_id
    assert delivery.parent is not None and delivery.parent.span_id == publish.context.span_id
    assert delivery.attributes is not None
    assert delivery.attributes["http.response.status_code"] == 204
    assert delivery.attributes["svc.attempt"] == 1
    assert request.attributes is not None
    assert request.attributes["http.response.status_code"] == 201


async def _delivered_spans(
    ctx: Context, exporter: InMemorySpanExporter, receiver: Receiver, headers: dict[str, str]
) -> list[ReadableSpan]:
    """Create a payment (with ``headers``), wait for its webhook; the spans finished by then."""
    key, _ = await ctx.api_keys.create("test", "traced")
    base = f"http://127.0.0.1:{ctx.settings.http_port}"
    async with aiohttp.ClientSession(base_url=base) as session:
        api = Api(session, key)
        await api.endpoint(receiver.url("/traced"), ["payment.created"])
        sent = {**api.headers, **headers, "Idempotency-Key": uuid.uuid4().hex, "Content-Type": FORM}
        async with session.post("/v1/payments", data=BODY, headers=sent) as answer:
            assert answer.status == 201
    await receiver.wait_for(lambda r: len(r) >= 1)
    await asyncio.sleep(0.2)  # the delivery's span ends right after the receipt
    return list(exporter.get_finished_spans())


@pytest.mark.settings(otel_sampler="parentbased_always_off")
async def test_a_trace_the_sampler_drops_makes_no_span_anywhere(
    traced: tuple[Context, InMemorySpanExporter], receiver: Receiver
) -> None:
    ctx, exporter = traced
    spans = await _delivered_spans(ctx, exporter, receiver, {})
    assert spans == []


@pytest.mark.settings(otel_sampler="parentbased_always_off")
async def test_a_callers_sampled_trace_is_followed_to_the_delivery(
    traced: tuple[Context, InMemorySpanExporter], receiver: Receiver
) -> None:
    ctx, exporter = traced
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    spans = await _delivered_spans(ctx, exporter, receiver, {TRACEPARENT: caller})
    for _ in range(50):
        if any(s.kind == SpanKind.CLIENT for s in spans):
            break
        await asyncio.sleep(0.05)
        spans = list(exporter.get_finished_spans())
    delivery = _one(spans, SpanKind.CLIENT, "deliver payment.created")
    request = _one(spans, SpanKind.SERVER, "POST /v1/payments")
    assert delivery.context is not None and request.context is not None
    assert delivery.context.trace_id == request.context.trace_id == int(caller[3:35], 16)


def test_off_makes_no_span_and_no_header() -> None:
    tracing = Tracing()
    assert not tracing.enabled and tracing.traceparent() is None
    with tracing.span("x", SpanKind.INTERNAL) as span:
        assert span is None
    event = new_event("payment.created", "test", {"id": "pay_1"})
    assert TRACEPARENT not in event_message(event, "org_1", tracing.traceparent()).headers
    job = DeliveryJob.of(event, "org_1", "we_1")
    assert TRACEPARENT not in job.to_message().headers
