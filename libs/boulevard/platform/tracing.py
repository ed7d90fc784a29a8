"""Traces (OpenTelemetry): on when an OTLP endpoint is set, off (and free) otherwise.

What is traced: every gRPC call a service serves (opentelemetry-instrumentation-grpc's
server interceptor, which continues a client's trace from the `traceparent` metadata); the
engine's request to the dice service over NATS (`dice.rpc.<op>`), whose trace context
travels in the NATS message headers so the dice service's span is a child of the engine's;
and the engine's append to GAMES. GAMES messages themselves carry no trace headers: the
ledger and every replay read them, and docs/architecture.md ("Why the headers are so few")
keeps them bare; docs/operations.md ("Traces") has the measurement. The ledger's posting is
therefore not in the SubmitAction trace; its log lines carry the game id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

_enabled = False
tracer = trace.get_tracer("boulevard")


def enabled() -> bool:
    return _enabled


def enable(provider: TracerProvider | None = None) -> None:
    """Turn tracing on with this provider (tests pass one with an in-memory exporter)."""
    global _enabled
    if provider is not None:
        trace.set_tracer_provider(provider)
    _enabled = True


def disable() -> None:
    """Stop adding interceptors and spans (the provider stays; OpenTelemetry sets it once)."""
    global _enabled
    _enabled = False


def configure_tracing(service: str, endpoint: str) -> TracerProvider | None:
    """With an OTLP/gRPC endpoint, export this process's spans there in batches; without
    one, do nothing (no provider, no interceptor, no headers)."""
    if not endpoint:
        return None
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: f"boulevard-{service}"}))
    provider.add_span_processor(
        BatchSpanProcessor(
            OTLPSpanExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"))
        )
    )
    enable(provider)
    return provider


def server_interceptors() -> list[Any]:
    """The gRPC server interceptor, when tracing is on."""
    if not _enabled:
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return [aio_server_interceptor()]  # type: ignore[no-untyped-call]


def client_interceptors() -> list[Any]:
    """For a client's channel (tests, tools): starts the trace a server continues."""
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    return list(aio_client_interceptors())  # type: ignore[no-untyped-call]


@contextmanager
def nats_request_span(subject: str, headers: dict[str, str]) -> Iterator[None]:
    """A client span around a NATS request; its context is written into `headers`."""
    if not _enabled:
        yield
        return
    with tracer.start_as_current_span(
        subject,
        kind=SpanKind.CLIENT,
        attributes={"messaging.system": "nats", "messaging.destination.name": subject},
    ):
        propagate.inject(headers)
        yield


@contextmanager
def nats_handler_span(subject: str, headers: Mapping[str, str] | None) -> Iterator[None]:
    """A server span for a NATS request, the child of the span that sent it."""
    if not _enabled:
        yield
        return
    parent = propagate.extract(dict(headers or {}))
    token = otel_context.attach(parent)
    try:
        with tracer.start_as_current_span(
            subject,
            kind=SpanKind.SERVER,
            attributes={"messaging.system": "nats", "messaging.destination.name": subject},
        ):
            yield
    finally:
        otel_context.detach(token)


@contextmanager
def span(name: str, **attributes: str | int) -> Iterator[None]:
    """An internal span (no-op while tracing is off)."""
    if not _enabled:
        yield
        return
    with tracer.start_as_current_span(name, attributes=attributes):
        yield
