"""`boulevard up` starts NATS and the four services; each answers health and reflection."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import nats
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from boulevard.messaging.server import free_port
from tests.support.processes import SERVICES, address, service_env

pytestmark = pytest.mark.e2e

PROTO_SERVICE = {
    "matchmaking": "boulevard.v1.MatchmakingService",
    "engine": "boulevard.v1.EngineService",
    "dice": "boulevard.v1.DiceService",
    "ledger": "boulevard.v1.LedgerService",
}


async def check(addr: str, service: str) -> list[str]:
    async with grpc.aio.insecure_channel(addr) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        async for response in stub.ServerReflectionInfo(iter([request]), timeout=5):
            return [s.name for s in response.list_services_response.service]
    raise AssertionError("no reflection answer")


async def refused_without_credentials(port: int) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization violation"):
        nc = await nats.connect(
            f"nats://127.0.0.1:{port}", allow_reconnect=False, max_reconnect_attempts=0,
            connect_timeout=2,
        )  # fmt: skip
        await nc.close()


def test_up_starts_every_service_healthy_and_stops_cleanly(tmp_path: Path) -> None:
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "platform up" in line:
                break
        assert any("platform up" in line for line in lines), "".join(lines)
        for name in SERVICES:
            assert any(name in line and "SERVING" in line for line in lines)
            listed = asyncio.run(check(address(env, name), PROTO_SERVICE[name]))
            assert PROTO_SERVICE[name] in listed
            assert "grpc.health.v1.Health" in listed
        # The embedded NATS of `make run` is closed: no anonymous client gets in.
        asyncio.run(refused_without_credentials(int(env["BOULEVARD_EMBEDDED_NATS_PORT"])))
        identities = tmp_path / "data" / "nats-identities"
        for name in (*SERVICES, "admin"):
            assert (identities / f"{name}.nk").stat().st_mode & 0o777 == 0o600
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "stopped" in rest
        assert (tmp_path / "data" / "nats").is_dir()  # the embedded store lives there
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_up_plays_the_demo_game_to_the_end(tmp_path: Path) -> None:
    """What `make run` shows: four bots play Lords of Vegas through the public API, every
    move printed, then a final summary."""
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    result = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--exit-after-demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    assert "demo: lords_of_vegas game" in out
    assert "CardDrawn" in out and "GameFinished" in out
    assert "demo: finished at version" in out and "ranking bot-" in out
    assert "boulevard audit dice" in out
    assert out.rstrip().endswith("stopped")
