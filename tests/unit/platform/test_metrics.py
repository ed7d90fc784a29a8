"""The metrics module: loopback ports that collide with nothing, and the gRPC interceptor
counting calls by the status code the client saw (domain errors mapped first)."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.platform import metrics
from boulevard.platform.errors import NotFound
from boulevard.platform.settings import Settings

SERVICES = ("matchmaking", "engine", "dice", "ledger")


def test_metrics_listen_on_loopback_on_their_own_ports_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SERVICES:
        monkeypatch.delenv(f"BOULEVARD_{name.upper()}_METRICS_PORT", raising=False)
    monkeypatch.delenv("BOULEVARD_METRICS_HOST", raising=False)
    settings = Settings()
    assert settings.metrics_host == "127.0.0.1"
    ports = {settings.metrics_port_of(n) for n in SERVICES}
    assert ports == {9091, 9092, 9093, 9094}
    assert not ports & {settings.port_of(n) for n in SERVICES}


def test_otlp_endpoint_is_read_from_either_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BOULEVARD_OTLP_ENDPOINT", raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
    assert Settings().otlp_endpoint == "http://127.0.0.1:4317"
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
    assert Settings().otlp_endpoint == ""


class _Echo(health_pb2_grpc.HealthServicer):
    """A tiny generic servicer: Check answers, or raises the domain error it is told to."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: Exception | None = None

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext
    ) -> health_pb2.HealthCheckResponse:
        if self.fail is not None:
            raise self.fail
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


async def test_interceptor_counts_calls_by_the_code_the_client_saw() -> None:
    from boulevard.platform.grpc_errors import ErrorInterceptor

    servicer = _Echo()
    server = grpc.aio.server(interceptors=[metrics.MetricsInterceptor("unit"), ErrorInterceptor()])
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    counter = metrics.GRPC_REQUESTS

    def count(code: str) -> float:
        return counter.labels("unit", "Check", code)._value.get()  # type: ignore[attr-defined]

    ok0, nf0 = count("OK"), count("NOT_FOUND")
    seconds0 = metrics.GRPC_SECONDS.labels("unit", "Check")._sum.get()  # type: ignore[attr-defined]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest())
            await stub.Check(health_pb2.HealthCheckRequest())
            servicer.fail = NotFound("nothing here")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.Check(health_pb2.HealthCheckRequest())
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        await server.stop(None)
    assert count("OK") - ok0 == 2
    assert count("NOT_FOUND") - nf0 == 1
    assert count("UNKNOWN") == 0
    assert metrics.GRPC_SECONDS.labels("unit", "Check")._sum.get() > seconds0  # type: ignore[attr-defined]


def test_every_exported_name_is_namespaced() -> None:
    names = metrics.metric_names()
    ours = {n for n in names if n.startswith("boulevard_")}
    assert "boulevard_grpc_requests_total" in ours
    assert "boulevard_event_append_seconds_bucket" in ours
    assert "boulevard_poison_messages_total" in ours
    assert "process_resident_memory_bytes" in names


def test_a_poisoned_message_is_counted_for_the_scraper() -> None:
    from boulevard.messaging.poison import poisoned

    metrics.current_service = "ledger"
    child = metrics.POISON_MESSAGES.labels("ledger", "ledger-games")
    before = child._value.get()  # type: ignore[attr-defined]
    poisoned("ledger-games", "undecodable", subject="game.x", seq=7, error="bad bytes")
    assert child._value.get() - before == 1  # type: ignore[attr-defined]
