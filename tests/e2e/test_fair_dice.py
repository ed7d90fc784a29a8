"""Fair dice against a dishonest operator and a curious player (issue 12), on the whole
platform: every hosted game opens blind (seeds committed, server seed committed, seeds
revealed), no public API tells a spectator one undealt card, and `boulevard audit dice`
passes an honest game and fails, naming the nonce, a game someone burned an outcome in."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.fairness import client_seed_commitment
from boulevard.games import REGISTRY
from boulevard.platform.errors import FailedPrecondition
from boulevard.seats.player import play_game, reveal_seed
from services.engine.dice_client import DiceClient
from tests.e2e.conftest import REVEAL_SECONDS, Platform
from tests.e2e.test_game_audit import audit_game
from tests.e2e.test_games import OPERATOR_MD, create, game_seed
from tests.integration.dice.support import expand
from tests.support.identity import player_md
from tests.support.keys import seat_keys

pytestmark = pytest.mark.e2e

PLAYERS = {"lords_of_vegas": 2, "las_vegas": 3}


def players_for(game: str) -> int:
    return PLAYERS.get(game, REGISTRY[game].min_players)


async def dice_records(platform: Platform, game_id: str) -> list[dice_pb2.DiceRecord]:
    """The game's DICE records as only the dice service (or an admin) can read them, in the
    two-message form (a `signed_leaf` as its leaf, then its head)."""
    nc = await platform.nats.connect()
    try:
        js = nc.jetstream()
        records = []
        last = (await js.stream_info("DICE")).state.last_seq
        for seq in range(1, last + 1):
            msg = await js.get_msg("DICE", seq)
            if msg.subject == f"dice.{game_id}":
                records.append(dice_pb2.DiceRecord.FromString(msg.data or b""))
        return expand(records)
    finally:
        await nc.close()


def kinds(records: list[dice_pb2.DiceRecord]) -> list[str]:
    return [r.WhichOneof("record") or "" for r in records if not r.HasField("head")]


def pinned_dice_key(platform: Platform) -> str:
    """The dice service's public key from its key file, as an auditor who pinned it holds."""
    path = Path(platform.env["BOULEVARD_DATA_DIR"]) / "dice" / "signing-key"
    return TreeHeadSigner(bytes.fromhex(path.read_text().strip())).public_key.hex()


def audit(platform: Platform, game_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "boulevard.cli.main",
            "audit",
            "dice",
            game_id,
            "--dice",
            platform.address("dice"),
            "--engine",
            platform.address("engine"),
            "--dice-key",
            pinned_dice_key(platform),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def everything_public(platform: Platform, game_id: str) -> tuple[bytes, list[str]]:
    """What a spectator gets from every public API of a running game: the bytes of every
    answer, and the status of every refused call."""
    seen: list[bytes] = []
    refused: list[str] = []
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        engine = engine_pb2_grpc.EngineServiceStub(channel)
        game = await engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
        seen.append(game.SerializeToString())
        seen.append((await engine.ListGames(engine_pb2.ListGamesRequest())).SerializeToString())
        async for update in engine.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id)):
            seen.append(update.SerializeToString())
            if update.event.version >= game.version:
                break
    async with grpc.aio.insecure_channel(platform.address("dice")) as channel:
        dice = dice_pb2_grpc.DiceServiceStub(channel)
        commitment = await dice.GetCommitment(dice_pb2.GetCommitmentRequest(game_id=game_id))
        seen.append(commitment.SerializeToString())
        outcomes = await dice.ListOutcomes(dice_pb2.ListOutcomesRequest(game_id=game_id))
        assert outcomes.values_hidden and outcomes.outcomes
        assert all(not o.values and not o.blinding for o in outcomes.outcomes)
        seen.append(outcomes.SerializeToString())
        heads = await dice.GetLogHeads(dice_pb2.GetLogHeadsRequest(game_id=game_id))
        seen.append(heads.SerializeToString())
        size = heads.tree_size
        for leaf in range(size):
            proof = await dice.GetLogInclusionProof(
                dice_pb2.GetLogInclusionProofRequest(
                    game_id=game_id, tree_size=size, leaf_index=leaf
                )
            )
            seen.append(proof.SerializeToString())
        for first in range(1, size):
            proof = await dice.GetLogConsistencyProof(
                dice_pb2.GetLogConsistencyProofRequest(
                    game_id=game_id, first_tree_size=first, second_tree_size=size
                )
            )
            seen.append(proof.SerializeToString())
        for call in (
            dice.GetReveal(dice_pb2.GetRevealRequest(game_id=game_id)),
            dice.VerifyGame(dice_pb2.VerifyGameRequest(game_id=game_id)),
            dice.ListLogRecords(dice_pb2.ListLogRecordsRequest(game_id=game_id)),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call
            refused.append(err.value.code().name)
    return b"".join(seen), refused


def fragments(values: list[int]) -> list[bytes]:
    """How a run of undealt cards would look in an answer: as JSON (event payloads, views)
    and as protobuf packed varints (repeated integer fields)."""
    tail = values[-6:]
    packed = b"".join(_varint(v) for v in tail)
    return [json.dumps(tail).encode(), json.dumps(tail, separators=(",", ":")).encode(), packed]


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


@pytest.mark.parametrize("game", sorted(REGISTRY))
def test_each_game_opens_blind_keeps_its_cards_secret_and_audits(
    platform: Platform, game: str
) -> None:
    async def run() -> None:
        players = players_for(game)
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, game, players, reveal=False)
            game_id = created.game_id
            seeds = [game_seed(game_id, seat) for seat in range(players)]

            # 1-3: the dice service committed knowing only the seats' commitments, and
            # GameCreated published them; no chance has been resolved.
            records = await dice_records(platform, game_id)
            assert kinds(records) == ["opened"]
            opened = records[0].opened
            assert list(opened.client_seed_commitments) == [
                client_seed_commitment(s) for s in seeds
            ]
            assert all(seed.encode() not in records[0].SerializeToString() for seed in seeds)
            first = await anext(aiter(stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id))))
            payload = json.loads(first.event.payload)
            assert payload["seed_commitment"] == opened.commitment == created.seed_commitment
            assert [s["seed_commitment"] for s in payload["seats"]] == list(
                opened.client_seed_commitments
            )
            assert not (await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))).to_act

            # 4: a wrong reveal is refused; the right ones open the game's dice.
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reveal_seed(stub, game_id, created.player_tokens[0], seeds[1])
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            answers = [
                await reveal_seed(stub, game_id, token, seeds[seat])
                for seat, token in enumerate(created.player_tokens)
            ]
            assert [a.all_revealed for a in answers] == [False] * (players - 1) + [True]
            records = await dice_records(platform, game_id)
            assert kinds(records)[:3] == ["opened", "seeds", "outcome"]
            assert list(records[2].seeds.client_seeds) == seeds

            # Secret until used: a spectator with every public API learns no undealt card.
            # Shuffles of six items or more: a shorter run's bytes (e.g. a 3-tile stack
            # packed as 3 varints) turn up by chance in any large answer, so probing for
            # them proves nothing and fails at random (seen once for Vegas Showdown).
            secret = [
                list(r.outcome.values)
                for r in records
                if r.HasField("outcome")
                and r.outcome.kind == dice_pb2.OUTCOME_KIND_SHUFFLE
                and len(r.outcome.values) >= 6
            ]
            assert secret, "no deck to keep secret?"
            for r in records:  # the probe would see them, were they there
                if r.HasField("outcome") and list(r.outcome.values) in secret:
                    assert fragments(list(r.outcome.values))[2] in r.SerializeToString()
            answered, refused = await everything_public(platform, game_id)
            assert refused == ["FAILED_PRECONDITION"] * 3
            for values in secret:
                for fragment in fragments(values):
                    assert fragment not in answered, (game, fragment)

            await play_game(
                channel, game_id, game, list(created.player_tokens), seat_keys(players), seed=3
            )
        done = audit(platform, game_id)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "PASS" in done.stdout and "note" not in done.stdout, done.stdout

    asyncio.run(run())


def test_a_burned_outcome_fails_the_audit_and_an_early_reveal_is_refused(
    platform: Platform, tmp_path: Path
) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 2)
            # Someone holding the engine's NATS identity (a compromised engine, or the
            # operator): the only one the dice service answers (docs/security.md).
            nc = await platform.nats.connect("engine")
            try:
                client = DiceClient(nc, retry_for=5)
                with pytest.raises(FailedPrecondition, match="has not ended"):
                    await client.reveal(created.game_id)
                burned = await client.roll(created.game_id, "not-the-engine", 2, 6, "start")
            finally:
                await nc.close()
            await play_game(
                channel,
                created.game_id,
                "lords_of_vegas",
                list(created.player_tokens),
                seat_keys(2),
            )
        done = audit(platform, created.game_id)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"FAIL at nonce {burned.nonce} (outcome_unused)" in done.stdout, done.stdout
        # The game audit (and so audit all) sees it too, on the chain-checked log.
        report = tmp_path / "burned.html"
        game = audit_game(platform, created.game_id, "--html", str(report))
        assert game.returncode == 1, game.stdout + game.stderr
        assert f"outcome nonce {burned.nonce} was drawn but the game never used it" in (
            game.stdout
        ), game.stdout
        # Its report does not vouch for the dice either: the dice section fails with it.
        page = report.read_text(encoding="utf-8")
        assert 'id="verdict" class="verdict fail"' in page
        dice_heading = page.split(f'<h3 id="dice-{created.game_id}">', 1)[1].split("</h3>", 1)[0]
        assert "✓" not in dice_heading, dice_heading

    asyncio.run(run())


def test_a_seat_that_never_reveals_plays_with_an_empty_seed(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2, reveal=False)
            game_id = created.game_id
            answer = await reveal_seed(
                stub, game_id, created.player_tokens[0], game_seed(game_id, 0)
            )
            assert not answer.all_revealed
            # Nobody calls again: the engine's sweeper fixes the seeds after the deadline.
            give_up = time.monotonic() + REVEAL_SECONDS + 30
            while not (await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))).to_act:
                assert time.monotonic() < give_up, "the game never woke after the deadline"
                await asyncio.sleep(0.5)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await reveal_seed(stub, game_id, created.player_tokens[1], game_seed(game_id, 1))
            assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            await play_game(
                channel, game_id, "las_vegas", list(created.player_tokens), seat_keys(2)
            )
        records = await dice_records(platform, game_id)
        seeds = next(r.seeds for r in records if r.HasField("seeds"))
        assert list(seeds.client_seeds) == [game_seed(game_id, 0), ""]
        assert list(seeds.missing_seats) == [1]
        done = audit(platform, game_id)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "seat 1 did not reveal its client seed" in done.stdout, done.stdout

    asyncio.run(run())


def test_a_plaintext_client_seed_is_refused_not_ignored(platform: Platform) -> None:
    """An old client that still sends `client_seed` (a field that is reserved now) gets
    INVALID_ARGUMENT from CreateGame and CreateTicket, instead of a seat without a seed."""

    async def run() -> None:
        seat = engine_pb2.SeatAssignment(seat=0, player_id="p0")
        seat.MergeFromString(b"\x1a\x04seed")  # field 3, the old client_seed
        other = engine_pb2.SeatAssignment(seat=1, player_id="p1")
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id="legacy-seed", game="las_vegas", seats=[seat, other]
                    ),
                    metadata=OPERATOR_MD,
                )
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "client_seed_commitment" in (err.value.details() or "")
        ticket = matchmaking_pb2.CreateTicketRequest(request_id="legacy", game="las_vegas")
        ticket.MergeFromString(b"\x32\x04seed")  # field 6, the old client_seed
        async with grpc.aio.insecure_channel(platform.address("matchmaking")) as channel:
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await mm.CreateTicket(ticket, metadata=player_md("old-client"))
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    asyncio.run(run())
