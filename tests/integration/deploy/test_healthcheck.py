"""`python -m boulevard.cli.healthcheck` against a real gRPC health server on a free loopback
port, as the compose healthchecks and the Kubernetes exec probes run it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from boulevard.messaging.server import free_port

pytestmark = pytest.mark.integration

SERVICE = "boulevard.v1.EngineService"


def probe(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.healthcheck", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def health_server() -> Iterator[tuple[str, health.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(None)


def test_serving_exits_0(health_server: tuple[str, health.HealthServicer]) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    for args in ([address], [address, SERVICE]):
        result = probe(*args)
        assert result.returncode == 0, result.stderr
        assert "SERVING" in result.stdout


def test_not_serving_exits_1(health_server: tuple[str, health.HealthServicer]) -> None:
    address, servicer = health_server
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
    result = probe(address, SERVICE)
    assert result.returncode == 1
    assert f"unhealthy: {address} {SERVICE}: NOT_SERVING" in result.stderr


def test_alive_passes_not_serving_but_not_silence_or_a_miswired_port(
    health_server: tuple[str, health.HealthServicer],
) -> None:
    """Liveness (`--alive`): a service that says NOT_SERVING (its NATS is gone) is alive and
    must not be restarted; one that does not answer, or a port serving something else, is not."""
    address, servicer = health_server
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
    result = probe(address, SERVICE, "--alive")
    assert result.returncode == 0, result.stderr
    assert f"alive: {address} {SERVICE}: NOT_SERVING" in result.stdout
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    assert probe(address, SERVICE, "--alive").returncode == 0
    unknown = probe(address, "boulevard.v1.DiceService", "--alive")
    assert unknown.returncode == 1 and "SERVICE_UNKNOWN" in unknown.stderr
    silent = probe(f"127.0.0.1:{free_port()}", SERVICE, "--alive")
    assert silent.returncode == 1 and "no answer" in silent.stderr


def test_a_service_the_server_does_not_know_exits_1(
    health_server: tuple[str, health.HealthServicer],
) -> None:
    address, servicer = health_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    result = probe(address, "boulevard.v1.DiceService")
    assert result.returncode == 1
    assert "SERVICE_UNKNOWN" in result.stderr


def test_nothing_listening_exits_1() -> None:
    result = probe(f"127.0.0.1:{free_port()}", SERVICE)
    assert result.returncode == 1
    assert "no answer (UNAVAILABLE" in result.stderr


def test_a_server_that_never_answers_exits_1_after_the_timeout() -> None:
    with socket.socket() as listener:  # accepts connections, never speaks HTTP/2
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        started = time.monotonic()
        result = probe(f"127.0.0.1:{listener.getsockname()[1]}", "--timeout", "1")
        elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert "DEADLINE_EXCEEDED" in result.stderr
    assert elapsed < 15
