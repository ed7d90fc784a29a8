"""`boulevard up` starts NATS and the four services; each answers health and reflection."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, matchmaking_pb2, matchmaking_pb2_grpc
from boulevard.messaging.server import free_port
from boulevard.platform.identity import bearer
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


def login(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "login", *args],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout.strip()


async def queue(addr: str, token: str) -> matchmaking_pb2.Ticket:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        reply = await stub.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(game="las_vegas", min_seats=5),
            metadata=bearer(token),
            timeout=5,
        )
        return reply.ticket


async def list_games(addr: str, token: str) -> list[engine_pb2.GameSummary]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        reply = await stub.ListGames(engine_pb2.ListGamesRequest(), metadata=bearer(token))
        return list(reply.games)


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
        # `boulevard login` prints tokens of the issuer `up` made; the services accept them.
        token = login(env, "alice")
        ticket = asyncio.run(queue(address(env, "matchmaking"), token))
        assert ticket.player_id == "alice"
        (key,) = (tmp_path / "data" / "issuer" / "keys").glob("*.pem")
        assert key.stat().st_mode & 0o777 == 0o600
        operator = login(env, "olga", "--role", "operator")
        assert asyncio.run(list_games(address(env, "engine"), operator)) == []
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
