"""Holes a dishonest operator (every service's identity and key, no player's) had in the
audits (issue 25), tried on the whole platform: each test fails on the code before the fix."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import (
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    events_pb2,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.audit.evidence import ACTION, REVEAL, Accepted, Evidence
from boulevard.audit.keys import KeyHistory
from boulevard.audit.signing import Receipt, SigningKey, chain_hash
from boulevard.client.ledger import LedgerClient
from boulevard.contract.ledger import head_to_pb
from boulevard.eventlog.jetstream import EXPECTED_LAST_SUBJECT_SEQ, MSG_ID
from boulevard.fairness import client_seed_commitment
from boulevard.seats.player import keep_heads, play_game, reveal_seed
from tests.e2e.conftest import REVEAL_SECONDS, Platform
from tests.e2e.test_game_audit import audit_game, play, stored_log
from tests.e2e.test_games import OPERATOR_MD, create, game_seed, wait_reconciled
from tests.support.keys import seat_key, seat_keys

pytestmark = pytest.mark.e2e


def test_an_operator_cannot_name_a_seat_bot_n(platform: Platform) -> None:
    """CreateGame took `bot-1` as a human seat (bot: false) with a key the operator chose and
    handed the operator its token, though `bot-<n>` seats are the platform's bots."""

    async def run() -> None:
        seats = [
            engine_pb2.SeatAssignment(
                seat=i,
                player_id=name,
                client_seed_commitment=client_seed_commitment(f"s{i}"),
                public_key=seat_key(i).public_hex,
            )
            for i, name in enumerate(["ann", "bot-1"])
        ]
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id="reserved-bot", game="las_vegas", seats=seats
                    ),
                    metadata=OPERATOR_MD,
                )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "reserved for the platform's bots" in (err.value.details() or "")

    asyncio.run(run())


async def append_as_engine(
    platform: Platform, game_id: str, envelope: events_pb2.EventEnvelope
) -> None:
    """Publish `envelope` as the game's next commit with the engine's own NATS identity,
    chained correctly: what an operator holding the engine's credentials can write."""
    nc = await platform.nats.connect("engine")
    try:
        js = nc.jetstream()
        last = await js.get_last_msg("GAMES", f"game.{game_id}")
        commit = events_pb2.EventCommit(
            first_version=envelope.version,
            events=[
                events_pb2.StoredEvent(
                    event_id=envelope.event_id,
                    type=envelope.type,
                    data=envelope.SerializeToString(),
                )
            ],
        )
        await js.publish(
            f"game.{game_id}",
            commit.SerializeToString(),
            headers={MSG_ID: envelope.event_id, EXPECTED_LAST_SUBJECT_SEQ: str(last.seq)},
        )
    finally:
        await nc.close()


def cli(platform: Platform, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def addresses(platform: Platform, *names: str) -> list[str]:
    return [a for n in names for a in (f"--{n}", platform.address(n))]


def test_audit_all_covers_running_games_and_its_ledger_step_is_the_whole_ledger_audit(
    platform: Platform,
) -> None:
    """`audit all` audited finished games only, and its ledger step skipped reconciliation:
    after a money event forged with the engine's identity (its envelope moves money its
    payload does not), `audit ledger` failed while `audit all` said `PASS ledger: ok`."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))

    async def run() -> tuple[str, str, int]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            running = await create(stub, "las_vegas", 2)
        game_id, _ = await play(platform, "las_vegas", 2)
        log = await stored_log(platform, game_id)
        money = next(
            events_pb2.EventEnvelope.FromString(d)
            for d in log
            if events_pb2.EventEnvelope.FromString(d).transfers
        )
        forged = events_pb2.EventEnvelope()
        forged.CopyFrom(money)
        forged.event_id = uuid.uuid4().hex
        forged.version = len(log) + 1
        forged.prev_hash = chain_hash(log[-1])
        for t in forged.transfers:  # the ledger posts these; the rules move half
            t.amount *= 2
        await append_as_engine(platform, game_id, forged)
        return running.game_id, game_id, forged.version

    running, forged_game, version = asyncio.run(run())
    ledger = cli(platform, "audit", "ledger", "--quiet", "--address", platform.address("ledger"))
    assert ledger.returncode == 1, ledger.stdout + ledger.stderr
    everything = cli(
        platform, "audit", "all", "--game-name", "las_vegas", "--since", started, "--json",
        *addresses(platform, "engine", "dice", "ledger"),
    )  # fmt: skip
    assert everything.returncode == 1, everything.stdout + everything.stderr
    result = json.loads(everything.stdout)
    verdicts = {g["game_id"]: g for g in result["games"]}
    assert verdicts[running]["ok"], verdicts[running]
    assert "running: its log audited to version" in verdicts[running]["verdict"]
    assert not verdicts[forged_game]["ok"] and verdicts[forged_game]["failed_at"] == version
    assert not result["ledger"]["ok"], result["ledger"]
    assert f"reconcile: game {forged_game} at version {version}" in result["ledger"]["verdict"]


def engine_key(platform: Platform) -> SigningKey:
    """The engine's receipt key, from its key file: what the operator holds."""
    path = Path(platform.env["BOULEVARD_DATA_DIR"]) / "engine" / "signing-key"
    return SigningKey.from_hex(path.read_text())


def ledger_signer(platform: Platform) -> TreeHeadSigner:
    path = Path(platform.env["BOULEVARD_DATA_DIR"]) / "ledger" / "signing-key"
    return TreeHeadSigner(bytes.fromhex(path.read_text().strip()))


def test_a_dropped_reveal_is_shown_by_the_seats_receipt(platform: Platform, tmp_path: Path) -> None:
    """Seat 1 reveals; the operator's engine answers as the engine does — a receipt signed
    with the engine's key over the log's version and head — but never records the reveal.
    The deadline passes and seat 1 plays with an empty seed: every audit passed with a note.
    Seat 1's evidence file (the receipt and its seed) now fails the audit."""

    async def run() -> tuple[str, Evidence]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2, reveal=False)
            game_id = created.game_id
            honest = await reveal_seed(
                stub, game_id, created.player_tokens[0], game_seed(game_id, 0)
            )
            assert honest.HasField("receipt") and honest.receipt.time_unix_ms > 0
            page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=game_id))
            last = page.envelopes[-1]
            env = events_pb2.EventEnvelope.FromString(last.envelope)
            answered = Receipt.sign(
                engine_key(platform), game_id, last.version, bytes(last.chain_hash),
                int(env.time_unix_ms),
            )  # fmt: skip
            give_up = time.monotonic() + REVEAL_SECONDS + 30
            while not (await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))).to_act:
                assert time.monotonic() < give_up, "the game never woke after the deadline"
                await asyncio.sleep(0.5)
            await play_game(
                channel, game_id, "las_vegas", list(created.player_tokens), seat_keys(2)
            )
        seed = game_seed(game_id, 1)
        return game_id, Evidence(game_id, 1, [Accepted(REVEAL, answered, client_seed=seed)])

    game_id, evidence = asyncio.run(run())
    assert asyncio.run(wait_reconciled(platform, game_id)).reconciled
    alone = audit_game(platform, game_id)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert "seats [1] did not reveal" in alone.stdout, alone.stdout
    path = tmp_path / "seat1.json"
    path.write_text(evidence.dumps())
    shown = audit_game(platform, game_id, "--evidence", str(path))
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert f"at version {evidence.accepted[0].receipt.version}" in shown.stdout, shown.stdout
    assert "the reveal was dropped" in shown.stdout


def test_the_evidence_players_keep_passes_and_a_ledger_that_equivocates_fails(
    platform: Platform, tmp_path: Path
) -> None:
    """Each seat of a played game keeps its receipts (moves and reveal) and the ledger head
    it saw: `audit all --evidence DIR` passes them. A head the operator signed with the
    ledger's key over another history (shown to that player, not served later) fails."""

    async def run() -> tuple[str, list[Evidence], ledger_pb2.SignedTreeHead]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2, reveal=False)
            seats = await play_game(
                channel, created.game_id, "las_vegas", list(created.player_tokens),
                seat_keys(2), client_seeds=[game_seed(created.game_id, s) for s in range(2)],
            )  # fmt: skip
        assert (await wait_reconciled(platform, created.game_id)).reconciled
        async with grpc.aio.insecure_channel(platform.address("ledger")) as channel:
            for _ in range(100):  # the ledger signs within a second of posting
                try:
                    head, _, size = await LedgerClient(channel).tree_head()
                    if head.head.tree_size == size:
                        break
                except grpc.aio.AioRpcError as err:
                    assert err.code() == grpc.StatusCode.NOT_FOUND, err
                await asyncio.sleep(0.1)
        kept = []
        async with (
            grpc.aio.insecure_channel(platform.address("dice")) as dice,
            grpc.aio.insecure_channel(platform.address("ledger")) as ledger,
        ):
            for s in seats:
                evidence = s.evidence()
                kinds = [a.kind for a in evidence.accepted]
                assert kinds.count(REVEAL) == 1 and kinds.count(ACTION) == s.moves > 0
                await keep_heads(
                    evidence,
                    dice_pb2_grpc.DiceServiceStub(dice),
                    ledger_pb2_grpc.LedgerServiceStub(ledger),
                )
                assert evidence.dice_heads and evidence.ledger_heads
                kept.append(evidence)
        other = ledger_signer(platform).sign(
            head.head.tree_size, bytes(32), head.head.timestamp_unix_ms
        )
        return created.game_id, kept, head_to_pb(other)

    game_id, kept, equivocated = asyncio.run(run())
    folder = tmp_path / "evidence"
    folder.mkdir()
    for e in kept:
        (folder / f"{e.game_id}-{e.seat}.json").write_text(e.dumps())

    def audit_with(path: Path) -> dict[str, Any]:
        done = cli(
            platform, "audit", "all", "--game-name", "las_vegas", "--json",
            "--since", "10m", "--evidence", str(path),
            *addresses(platform, "engine", "dice", "ledger"),
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stdout + done.stderr
        games: dict[str, Any] = {g["game_id"]: g for g in json.loads(done.stdout)["games"]}
        return games[game_id]

    assert audit_with(folder)["ok"], audit_with(folder)
    kept[0].ledger_heads = [equivocated.SerializeToString()]
    (folder / f"{game_id}-0.json").write_text(kept[0].dumps())
    failed = audit_with(folder)
    assert not failed["ok"] and "not a prefix" in failed["verdict"], failed


def test_an_unreadable_forged_event_halts_only_its_game_and_its_log_is_still_served(
    platform: Platform,
) -> None:
    """A well-formed commit on a running game's subject, written with the engine's identity,
    whose event has an unknown type: it stopped the game for good, GetGameLog answered
    INVALID_ARGUMENT for the whole game (so `audit game` could only say "cannot audit"), and
    `audit all` never looked at it. Now the game halts visibly, its log is served as stored,
    the audits fail at that version, and the other games go on."""
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))

    async def run() -> tuple[str, int]:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            victim = await create(stub, "las_vegas", 2)
            other = await create(stub, "las_vegas", 2)
            page = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=victim.game_id))
            last = page.envelopes[-1]
            forged = events_pb2.EventEnvelope.FromString(last.envelope)
            forged.event_id = uuid.uuid4().hex
            forged.type = "NoSuchEvent"
            forged.payload = b'{"type":"NoSuchEvent"}'
            forged.version = last.version + 1
            forged.prev_hash = bytes(last.chain_hash)
            forged.ClearField("transfers")
            await append_as_engine(platform, victim.game_id, forged)
            await platform.arestart("engine")  # the event is read as the game loads
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=victim.game_id))
            assert got.status == engine_pb2.GAME_STATUS_HALTED, got
            assert got.halted_at_version == forged.version and "NoSuchEvent" in got.halted_reason
            served = await stub.GetGameLog(engine_pb2.GetGameLogRequest(game_id=victim.game_id))
            assert served.halted_at_version == forged.version
            assert [e.version for e in served.envelopes][-1] == forged.version
            assert served.envelopes[-1].envelope == forged.SerializeToString()
            halted = await stub.ListGames(
                engine_pb2.ListGamesRequest(status=engine_pb2.GAME_STATUS_HALTED, page_size=500)
            )
            assert victim.game_id in [g.game_id for g in halted.games]
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await play_game(
                    channel, victim.game_id, "las_vegas", list(victim.player_tokens),
                    seat_keys(2),
                )  # fmt: skip
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            # The other game is untouched: it plays to its end.
            await play_game(channel, other.game_id, "las_vegas", list(other.player_tokens),
                            seat_keys(2))  # fmt: skip
        return victim.game_id, forged.version

    game_id, version = asyncio.run(run())
    assert "GAME HALTED" in platform.services["engine"].log()
    one = audit_game(platform, game_id)
    assert one.returncode == 1, one.stdout + one.stderr
    assert f"at version {version}" in one.stdout, one.stdout
    everything = cli(
        platform, "audit", "all", "--game-name", "las_vegas", "--since", started, "--json",
        "--no-ledger", *addresses(platform, "engine", "dice"),
    )  # fmt: skip
    verdicts = {g["game_id"]: g for g in json.loads(everything.stdout)["games"]}
    assert verdicts[game_id]["failed_at"] == version, verdicts[game_id]
    assert all(g["ok"] for g in verdicts.values() if g["game_id"] != game_id), verdicts


def test_keys_pinned_from_the_published_history_and_a_key_not_in_it(
    platform: Platform, tmp_path: Path
) -> None:
    """An auditor took the engine, dice and ledger keys from the APIs it was auditing. The
    operator now publishes its keys as a key history; `--trust FILE` pins them: an honest
    game passes, and against a history that lacks the engine key the platform presents (an
    operator serving a key of its own) the audit fails."""
    history = tmp_path / "keys.json"
    data = Path(platform.env["BOULEVARD_DATA_DIR"])
    made = cli(platform, "keys", "history", "--out", str(history), "--data-dir", str(data))
    assert made.returncode == 0, made.stdout + made.stderr
    pinned = KeyHistory.loads(history.read_text())
    assert pinned.problem() is None
    assert pinned.current("engine") == engine_key(platform).public_hex
    assert set(pinned.keys("ledger")) == {ledger_signer(platform).public_key.hex()}
    game_id, _ = asyncio.run(play(platform, "las_vegas", 2))
    trusted = audit_game(platform, game_id, "--trust", str(history))
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    # A history with another engine key (properly handed over) does not hold the one served.
    other = SigningKey.generate()
    elsewhere = KeyHistory([e for e in pinned.entries if e.role != "engine"]).extended(
        "engine", other.public_hex, 1, None
    )
    wrong = tmp_path / "other.json"
    wrong.write_text(elsewhere.dumps())
    refused = audit_game(platform, game_id, "--trust", str(wrong))
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "not in the pinned key history" in refused.stdout, refused.stdout
    # A history whose engine key was swapped in without the old key's signature: refused.
    swapped = KeyHistory([*pinned.entries, *KeyHistory().extended(
        "engine", other.public_hex, 2**42, None).entries])  # fmt: skip
    wrong.write_text(swapped.dumps())
    unsigned = audit_game(platform, game_id, "--trust", str(wrong))
    assert unsigned.returncode == 2 and "not signed by the key before it" in unsigned.stderr
