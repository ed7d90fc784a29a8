"""`boulevard audit game` against the whole platform: honest games pass with the receipts
their players kept and the ledger's anchor; an event published onto GAMES by someone who is
not a player (here through an admin NATS connection, chained correctly) fails the audit at
exactly that version."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import grpc
import pytest

from boulevard.accounting import decode_entry
from boulevard.accounting.treehead import key_id
from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2
from boulevard.audit.dice_anchor import ServedDiceLog, anchor_problem
from boulevard.audit.signing import chain_hash
from boulevard.client.dice import DiceReader
from boulevard.client.ledger import LedgerClient
from boulevard.eventlog.jetstream import EXPECTED_LAST_SUBJECT_SEQ, MSG_ID
from boulevard.games.base import DiceHeadRef
from boulevard.games.codec import from_plain
from boulevard.seats.player import play_game
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create, wait_reconciled
from tests.support.keys import seat_keys

pytestmark = pytest.mark.e2e


def audit_game(platform: Platform, game_id: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable, "-m", "boulevard.cli.main", "audit", "game", game_id,
            "--engine", platform.address("engine"),
            "--dice", platform.address("dice"),
            "--ledger", platform.address("ledger"),
            *extra,
        ],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


async def play(platform: Platform, game: str, players: int) -> tuple[str, list[engine_pb2.Receipt]]:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, game, players)
        seats = await play_game(
            channel, created.game_id, game, list(created.player_tokens), seat_keys(players), seed=2
        )
    receipts = [r for s in seats for r in s.receipts]
    reconciled = await wait_reconciled(platform, created.game_id)
    assert reconciled.reconciled, reconciled.message
    return created.game_id, receipts


async def stored_log(platform: Platform, game_id: str) -> list[bytes]:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        page = await engine_pb2_grpc.EngineServiceStub(channel).GetGameLog(
            engine_pb2.GetGameLogRequest(game_id=game_id)
        )
    assert page.finished and not page.next_from_version
    assert all(not e.redacted and e.chain_hash == chain_hash(e.envelope) for e in page.envelopes)
    return [bytes(e.envelope) for e in page.envelopes]


async def anchored_head(platform: Platform, game_id: str) -> bytes:
    """The chain head the ledger anchored for the game (posted shortly after its end)."""
    async with grpc.aio.insecure_channel(platform.address("ledger")) as channel:
        for _ in range(100):
            async for e in LedgerClient(channel).entries(game_id=game_id):
                entry = decode_entry(bytes(e.canonical))
                if entry.anchor is not None:
                    return entry.anchor
            await asyncio.sleep(0.1)
    raise AssertionError("the ledger never anchored the game")


async def dice_log(platform: Platform, game_id: str) -> ServedDiceLog:
    """The game's dice log as served, with the dice service's key (the reveal follows the
    game's end by a moment: waited for)."""
    async with grpc.aio.insecure_channel(platform.address("dice")) as channel:
        reader = DiceReader(channel)
        key = bytes((await reader.log_heads(game_id)).public_key)
        for _ in range(100):
            try:
                return ServedDiceLog(await reader.log_records(game_id), {key_id(key): key})
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
            await asyncio.sleep(0.1)
    raise AssertionError("the dice service never revealed the game")


def dice_anchor_problem(served: ServedDiceLog, log: list[bytes]) -> str | None:
    """What is wrong with the dice head the log's GameFinished records, against `served`."""
    finished = events_pb2.EventEnvelope.FromString(log[-1])
    assert finished.type == "GameFinished"
    head = json.loads(finished.payload).get("dice_head")
    assert head is not None, "GameFinished carries no dice head"
    assert served.leaves is not None
    ref = from_plain(DiceHeadRef, head)
    return anchor_problem(finished.game_id, ref, served.leaves, served.keys)


@pytest.mark.parametrize(("game", "players"), [("lords_of_vegas", 2), ("las_vegas", 3)])
def test_honest_games_pass_with_receipts_and_the_ledger_anchor(
    platform: Platform, tmp_path: Path, game: str, players: int
) -> None:
    async def run() -> None:
        game_id, receipts = await play(platform, game, players)
        log = await stored_log(platform, game_id)
        assert await anchored_head(platform, game_id) == chain_hash(log[-1])
        # The ledger's anchor is the chain hash of a GameFinished that carries the dice
        # log's signed head: one head over moves, money and dice.
        assert dice_anchor_problem(await dice_log(platform, game_id), log) is None
        path = tmp_path / "receipts.jsonl"
        path.write_text(
            "".join(
                json.dumps({"game_id": r.game_id, "version": r.version,
                            "chain_head": r.chain_head.hex(), "key_id": r.key_id,
                            "signature": r.signature.hex(),
                            "time_unix_ms": r.time_unix_ms}) + "\n"
                for r in receipts
            )
        )  # fmt: skip
        result = audit_game(platform, game_id, "--receipts", str(path))
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith("PASS") and f"{len(receipts)} receipts" in result.stdout
        assert "GameFinished's dice head anchors the dice log's" in result.stdout
        # A receipt for a history the log does not have fails the audit at its version.
        bad = receipts[len(receipts) // 2]
        forged = {"game_id": game_id, "version": bad.version, "chain_head": "00" * 32,
                  "key_id": bad.key_id, "signature": bad.signature.hex(),
                  "time_unix_ms": bad.time_unix_ms}  # fmt: skip
        path.write_text(json.dumps(forged) + "\n")
        result = audit_game(platform, game_id, "--receipts", str(path))
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"at version {bad.version}" in result.stdout

    asyncio.run(run())


def test_an_event_no_player_caused_fails_the_audit_at_its_version(platform: Platform) -> None:
    async def run() -> None:
        game_id, _ = await play(platform, "las_vegas", 2)
        log = await stored_log(platform, game_id)
        assert audit_game(platform, game_id).returncode == 0
        # The attacker copies a money-moving event, gives it the next version and chains it
        # correctly (the stream is readable), and publishes it where the engine writes.
        envs = [events_pb2.EventEnvelope.FromString(d) for d in log]
        money = next(e for e in envs if e.transfers)
        forged = events_pb2.EventEnvelope()
        forged.CopyFrom(money)
        forged.event_id = uuid.uuid4().hex
        forged.version = len(log) + 1
        forged.prev_hash = chain_hash(log[-1])
        commit = events_pb2.EventCommit(
            first_version=forged.version,
            events=[
                events_pb2.StoredEvent(
                    event_id=forged.event_id, type=forged.type, data=forged.SerializeToString()
                )
            ],
        )
        nc = await platform.nats.connect()
        try:
            js = nc.jetstream()
            last = await js.get_last_msg("GAMES", f"game.{game_id}")
            await js.publish(
                f"game.{game_id}",
                commit.SerializeToString(),
                headers={MSG_ID: forged.event_id, EXPECTED_LAST_SUBJECT_SEQ: str(last.seq)},
            )
        finally:
            await nc.close()
        result = audit_game(platform, game_id, "--no-ledger")
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"at version {forged.version}" in result.stdout, result.stdout

    asyncio.run(run())


def test_the_public_log_hides_a_live_games_shuffles_and_audit_all_reports_progress(
    platform: Platform,
) -> None:
    # Only the games that end from now on: other tests on this platform leave forged
    # lords_of_vegas games behind (test_fair_dice burns an outcome), which audit all fails.
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 2)
            page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=created.game_id))
            assert not page.finished
            hidden = [e for e in page.envelopes if e.redacted]
            assert len(hidden) == 1  # the deck's shuffle: its order is the game's future
            env = events_pb2.EventEnvelope.FromString(hidden[0].envelope)
            assert json.loads(env.payload)["values"] == []
            assert hidden[0].chain_hash != chain_hash(hidden[0].envelope)
            # The audit of the running game stops at the hidden shuffle, which it checks is
            # the one the rules ask for there (the flag is the server's word).
            live = audit_game(platform, created.game_id)
            assert live.returncode == 0, live.stdout + live.stderr
            assert "(in progress)" in live.stdout
            assert f"stopped early: version {hidden[0].version} is hidden" in live.stdout
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetGameLog(
                    engine_pb2.GetGameLogRequest(game_id=created.game_id, page_size=5000)
                )
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id="no-such-game"))
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        await play(platform, "lords_of_vegas", 2)
        await play(platform, "lords_of_vegas", 2)

    asyncio.run(run())
    result = subprocess.run(
        [
            sys.executable, "-m", "boulevard.cli.main", "audit", "all",
            "--game-name", "lords_of_vegas", "--limit", "2", "--since", started,
            "--engine", platform.address("engine"),
            "--dice", platform.address("dice"),
            "--ledger", platform.address("ledger"),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[1/2]" in result.stdout and "[2/2]" in result.stdout
    assert "PASS: 2 games audited, 0 failed" in result.stdout


def test_a_forged_snapshot_is_reported_and_never_used(platform: Platform) -> None:
    """Someone with write access to the snapshot bucket rewrites a finished game's snapshot
    (the game back in play, at a later version); after a restart the engine refuses it and
    serves the game its log says."""

    async def run() -> None:
        game_id, _ = await play(platform, "las_vegas", 2)
        log = await stored_log(platform, game_id)
        nc = await platform.nats.connect()
        try:
            kv = await nc.jetstream().key_value("engine_snapshots")
            sealed = json.loads((await kv.get(game_id)).value)
            body = json.loads(sealed["body"])
            assert body["chain_hash"] == chain_hash(log[-1]).hex()
            body["finished"] = None
            body["version"] = len(log) + 50
            await kv.put(
                game_id,
                json.dumps({"body": json.dumps(body), "signature": sealed["signature"]}).encode(),
            )
        finally:
            await nc.close()
        await platform.arestart("engine")
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            got = await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
                engine_pb2.GetGameRequest(game_id=game_id)
            )
        assert got.status == engine_pb2.GAME_STATUS_FINISHED and got.version == len(log)
        assert "forged snapshot" in platform.services["engine"].log()

    asyncio.run(run())


def test_audit_all_since_takes_the_games_that_ended_since_then(platform: Platform) -> None:
    """`--since` filters on when the engine recorded each game's end (ListGames'
    updated_unix_ms): a game that just ended is in a span of the last hour, and nothing has
    ended since tomorrow; a --since that is no time is a usage error (exit 2)."""
    before_ms = int(time.time() * 1000)
    game_id, _ = asyncio.run(play(platform, "las_vegas", 2))

    async def summary() -> engine_pb2.GameSummary:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            page = await engine_pb2_grpc.EngineServiceStub(channel).ListGames(
                engine_pb2.ListGamesRequest(
                    status=engine_pb2.GAME_STATUS_FINISHED, game="las_vegas", page_size=500
                )
            )
        return next(g for g in page.games if g.game_id == game_id)

    assert asyncio.run(summary()).updated_unix_ms >= before_ms

    def audit_all(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable, "-m", "boulevard.cli.main", "audit", "all",
                "--game-name", "las_vegas", "--no-ledger", "--json",
                "--engine", platform.address("engine"), "--dice", platform.address("dice"),
                *extra,
            ],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip

    recent = audit_all("--since", "1h")
    # Other tests of this module forge games of their own (they fail, exit 1): what matters
    # here is that this game is among those audited, and passes.
    assert recent.returncode in (0, 1), recent.stdout + recent.stderr
    audited = {g["game_id"]: g["ok"] for g in json.loads(recent.stdout)["games"]}
    assert audited.get(game_id) is True, recent.stdout
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
    none = audit_all("--since", tomorrow)
    assert none.returncode == 0, none.stdout + none.stderr
    assert json.loads(none.stdout)["audited"] == 0
    wrong = audit_all("--since", "last tuesday")
    assert wrong.returncode == 2
    said = " ".join(wrong.stderr.replace("│", " ").split())  # rich boxes and wraps it
    assert "expected a span like 24h" in said
