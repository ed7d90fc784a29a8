"""A rolling upgrade, tested (docs/operations.md, "Upgrading"): on one NATS, an engine of the
previous release — its own code, from a git worktree of the commit releases.json names —
and one of today's serve at the same time. A Long Shot game created and begun under the old
release finishes under the new one with the rules it was created with (version 1); a game
created on the new engine takes the newest rules (version 2); every audit passes for both,
with today's CLI and with the standalone auditor installed alone in a fresh venv."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.cli.up import wait_serving
from boulevard.fairness import client_seed_commitment
from boulevard.games.upcasting import SCHEMA_VERSION
from boulevard.games.versions import Release, newest, releases, rules_for
from boulevard.messaging.server import free_port
from boulevard.seats.player import play_game, reveal_seed
from tests.e2e.conftest import Platform
from tests.e2e.test_game_audit import audit_game
from tests.e2e.test_games import OPERATOR_MD, seed_of, wait_reconciled
from tests.integration.test_standalone_auditor import install_auditor
from tests.integration.test_standalone_auditor import run as run_auditor
from tests.support.keys import seat_key, seat_keys

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GAME, PLAYERS = "long_shot", 3


def previous_release() -> Release:
    """The newest release whose Long Shot rules are older than today's: what a fleet
    upgrades from across this game's rules change. (Not simply the newest release whose
    rules differ from today's: another game's change — Vegas Showdown's version 2 — made
    that release 2, which already pins Long Shot's version 2, and the game begun there
    would test nothing of an upgrade of its rules.)"""
    older = [r for r in releases() if dict(r.rules)[GAME] < newest(GAME).number]
    assert older, f"no release before today's {GAME} rules"
    return older[-1]


@pytest.fixture(scope="module")
def old_checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A git worktree of the previous release's commit (no tag needed: commits travel)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    release = previous_release()
    path = tmp_path_factory.mktemp("release") / release.name
    made = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), release.commit],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, (
        f"cannot check out release {release.name} ({release.commit}): {made.stderr} — a "
        "shallow clone? (git fetch --unshallow)"
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)])


@pytest.fixture(scope="module")
def auditor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_auditor(tmp_path_factory.mktemp("auditor"))


@contextlib.contextmanager
def old_engine(platform: Platform, checkout: Path) -> Iterator[str]:
    """The previous release's engine on the platform's NATS: its own code (run from its
    worktree, which holds its generated protos), today's venv for the libraries."""
    env = dict(platform.env)
    port = free_port()
    env["BOULEVARD_ENGINE_PORT"] = str(port)
    env["BOULEVARD_ENGINE_METRICS_PORT"] = str(free_port())
    env["PYTHONPATH"] = f"{checkout / 'libs'}:{checkout}"
    log = open(platform.log_dir / "engine-old.log", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.engine"],
        cwd=checkout,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    address = f"127.0.0.1:{port}"
    try:
        asyncio.run(wait_serving(address, 60, proc))
        yield address
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


async def create(address: str) -> tuple[str, list[str], str]:
    """A Long Shot game on the engine at `address`, every seat's seed revealed: (game id,
    seat tokens, request id)."""
    request_id = uuid.uuid4().hex
    async with grpc.aio.insecure_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await stub.CreateGame(
            engine_pb2.CreateGameRequest(
                request_id=request_id,
                game=GAME,
                seats=[
                    engine_pb2.SeatAssignment(
                        seat=i,
                        player_id=f"p{i}",
                        client_seed_commitment=client_seed_commitment(seed_of(request_id, i)),
                        public_key=seat_key(i).public_hex,
                    )
                    for i in range(PLAYERS)
                ],
            ),
            metadata=OPERATOR_MD,
        )
        for seat, token in enumerate(created.player_tokens):
            await reveal_seed(stub, created.game_id, token, seed_of(request_id, seat))
    return created.game_id, list(created.player_tokens), request_id


async def version_of(address: str, game_id: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        game = await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
            engine_pb2.GetGameRequest(game_id=game_id)
        )
    return int(game.version)


async def play(address: str, game_id: str, tokens: list[str], until: int | None = None) -> None:
    """Bots play the game through the engine at `address`: to its end, or (`until`) until
    its log reaches that version."""
    async with grpc.aio.insecure_channel(address) as channel:
        task = asyncio.ensure_future(
            play_game(channel, game_id, GAME, tokens, seat_keys(PLAYERS), seed=4)
        )
        if until is None:
            await task
            return
        for _ in range(2000):  # polls the engine, not a flag of ours: no Event to wait on
            if task.done() or await version_of(address, game_id) >= until:
                break
            await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def log_json(address: str, game_id: str) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        page = await engine_pb2_grpc.EngineServiceStub(channel).GetGameLog(
            engine_pb2.GetGameLogRequest(game_id=game_id, page_size=1000)
        )
    assert page.finished and not page.next_from_version
    return json_format.MessageToJson(page)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_game_begun_under_the_old_release_finishes_under_the_new_one(
    platform: Platform, old_checkout: Path, auditor: Path, tmp_path: Path
) -> None:
    new = platform.address("engine")
    with old_engine(platform, old_checkout) as old:
        game_id, tokens, _ = asyncio.run(create(old))
        asyncio.run(play(old, game_id, tokens, until=40))
        # Both serve at once, and both read the same game from the same log.
        begun = asyncio.run(version_of(old, game_id))
        assert begun >= 40 and asyncio.run(version_of(new, game_id)) >= begun
        # The rest of the game through today's engine, the old one still up.
        asyncio.run(play(new, game_id, tokens))
        # A game created now, on the new engine, takes the newest rules.
        fresh_id, fresh_tokens, _ = asyncio.run(create(new))
        asyncio.run(play(new, fresh_id, fresh_tokens))
    for gid, number in ((game_id, 1), (fresh_id, newest(GAME).number)):
        reconciled = asyncio.run(wait_reconciled(platform, gid))
        assert reconciled.reconciled, reconciled.message
        audited = audit_game(platform, gid)
        assert audited.returncode == 0, audited.stdout + audited.stderr
        dice = cli("audit", "dice", gid, "--dice", platform.address("dice"), "--engine", new)
        assert dice.returncode == 0, dice.stdout + dice.stderr
        ledger = cli("audit", "ledger", "--game", gid, "--address", platform.address("ledger"))
        assert ledger.returncode == 0, ledger.stdout + ledger.stderr
        # And the standalone auditor, installed alone, re-decides it with the rules it names.
        path = tmp_path / f"{gid}.json"
        path.write_text(asyncio.run(log_json(new, gid)))
        if gid == game_id:
            # Begun by the old release (schema 0, no rules version), ended by the new.
            page = json_format.Parse(path.read_text(), engine_pb2.GetGameLogResponse())
            envs = [events_pb2.EventEnvelope.FromString(e.envelope) for e in page.envelopes]
            assert envs[0].schema_version == 0 and b"rules_version" not in envs[0].payload
            assert envs[-1].type == "GameFinished" and envs[-1].schema_version == SCHEMA_VERSION
        standalone = run_auditor(auditor, "game", str(path))
        assert standalone.returncode == 0, standalone.stdout + standalone.stderr
        pin = rules_for(GAME, "").pin if number == 1 else newest(GAME).pin
        assert f"rules version {pin}" in standalone.stdout
