"""Whole games through the public gRPC API with every service a separate process on a real
nats-server: bots play every seat; afterwards the dice verify and the ledger reconciles."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid

import grpc
import pytest

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.fairness import client_seed_commitment
from boulevard.seats.player import play_game, reveal_seed
from tests.e2e.conftest import OPERATOR, Platform
from tests.support.keys import seat_key, seat_keys

pytestmark = pytest.mark.e2e

OPERATOR_MD = (("authorization", f"Bearer {OPERATOR}"),)


def seed_of(request_id: str, seat: int) -> str:
    return f"seed-{request_id}-{seat}"


# game id -> the request id `create` made it with (an operator's game id is a digest of the
# operator and the request id, so the seeds are named after the request id).
REQUEST_OF: dict[str, str] = {}


def game_seed(game_id: str, seat: int) -> str:
    """The client seed `create` committed to for a seat of the game it made."""
    return seed_of(REQUEST_OF[game_id], seat)


async def create(
    stub: engine_pb2_grpc.EngineServiceStub,
    game: str,
    players: int,
    reveal: bool = True,
    **options: str,
) -> engine_pb2.CreateGameResponse:
    """A game whose seats committed to `seed_of(request id, seat)`; with `reveal`, every
    seat has revealed its seed too (the opening done, the game's dice running)."""
    request_id = uuid.uuid4().hex
    created: engine_pb2.CreateGameResponse = await stub.CreateGame(
        engine_pb2.CreateGameRequest(
            request_id=request_id,
            game=game,
            seats=[
                engine_pb2.SeatAssignment(
                    seat=i,
                    player_id=f"p{i}",
                    client_seed_commitment=client_seed_commitment(seed_of(request_id, i)),
                    public_key=seat_key(i).public_hex,
                )
                for i in range(players)
            ],
            options=options,
        ),
        metadata=OPERATOR_MD,
    )
    REQUEST_OF[created.game_id] = request_id
    if reveal:
        for seat, token in enumerate(created.player_tokens):
            await reveal_seed(stub, created.game_id, token, seed_of(request_id, seat))
    return created


async def wait_reconciled(platform: Platform, game_id: str) -> ledger_pb2.ReconcileResponse:
    """The ledger posts asynchronously from GAMES; give it a moment to catch up."""
    async with grpc.aio.insecure_channel(platform.address("ledger")) as channel:
        stub = ledger_pb2_grpc.LedgerServiceStub(channel)
        reply = None
        for _ in range(100):
            reply = await stub.Reconcile(ledger_pb2.ReconcileRequest(game_id=game_id))
            if reply.reconciled:
                return reply
            await asyncio.sleep(0.1)
        assert reply is not None
        return reply


async def play_and_check(platform: Platform, game: str, players: int, **options: str) -> None:
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, game, players, **options)
        seats = await play_game(
            channel,
            created.game_id,
            game,
            list(created.player_tokens),
            seat_keys(players),
            seed=1,
        )
        assert all(s.moves > 0 for s in seats)
        final = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
        assert final.status == engine_pb2.GAME_STATUS_FINISHED
    async with grpc.aio.insecure_channel(platform.address("dice")) as channel:
        verdict = await dice_pb2_grpc.DiceServiceStub(channel).VerifyGame(
            dice_pb2.VerifyGameRequest(game_id=created.game_id)
        )
        assert verdict.ok, verdict.summary
        assert verdict.checked > 0
    reconciled = await wait_reconciled(platform, created.game_id)
    assert reconciled.reconciled, reconciled.message
    # The auditor's own tools, through the public APIs only.
    dice_audit = subprocess.run(
        [
            sys.executable,
            "-m",
            "boulevard.cli.main",
            "audit",
            "dice",
            created.game_id,
            "--dice",
            platform.address("dice"),
            "--engine",
            platform.address("engine"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dice_audit.returncode == 0, dice_audit.stdout + dice_audit.stderr
    assert "PASS" in dice_audit.stdout.upper() or "ok" in dice_audit.stdout.lower()
    ledger_audit = subprocess.run(
        [
            sys.executable,
            "-m",
            "boulevard.cli.main",
            "audit",
            "ledger",
            "--game",
            created.game_id,
            "--address",
            platform.address("ledger"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ledger_audit.returncode == 0, ledger_audit.stdout + ledger_audit.stderr


@pytest.mark.parametrize("players", [2, 3, 4])
def test_lords_of_vegas_by_bots(platform: Platform, players: int) -> None:
    asyncio.run(play_and_check(platform, "lords_of_vegas", players))


@pytest.mark.parametrize(("players", "white"), [(2, "true"), (5, "false")])
def test_las_vegas_by_bots(platform: Platform, players: int, white: str) -> None:
    asyncio.run(play_and_check(platform, "las_vegas", players, white_dice=white))


def test_list_games_filters_by_status_game_and_player(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            vegas = await create(stub, "las_vegas", 2)
            lords = await create(stub, "lords_of_vegas", 2)
            await play_game(
                channel, vegas.game_id, "las_vegas", list(vegas.player_tokens), seat_keys(2)
            )

            async def listed(size: int, **kw: object) -> list[str]:
                found: list[str] = []
                token = ""
                while True:
                    reply = await stub.ListGames(
                        engine_pb2.ListGamesRequest(page_size=size, page_token=token, **kw),  # type: ignore[arg-type]
                        metadata=OPERATOR_MD,  # filtering by player is the operator's
                    )
                    assert len(reply.games) <= size
                    found += [g.game_id for g in reply.games]
                    if not reply.next_page_token:
                        return found
                    assert reply.next_page_token == reply.games[-1].game_id
                    token = reply.next_page_token

            async def ids(**kw: object) -> set[str]:
                return set(await listed(2, **kw))

            # Small pages add up to the same ordered listing as large ones: none twice,
            # none skipped, in game id order.
            small, large = await listed(2), await listed(500)
            assert small == large == sorted(set(large))

            finished = await ids(status=engine_pb2.GAME_STATUS_FINISHED)
            active = await ids(status=engine_pb2.GAME_STATUS_ACTIVE)
            assert vegas.game_id in finished and vegas.game_id not in active
            assert lords.game_id in active and lords.game_id not in finished
            assert lords.game_id in await ids(game="lords_of_vegas")
            assert vegas.game_id not in await ids(game="lords_of_vegas")
            assert {vegas.game_id, lords.game_id} <= await ids(player_id="p1")
            assert not await ids(player_id="nobody")

    asyncio.run(run())


def test_hidden_information_stays_hidden_until_the_end(platform: Platform) -> None:
    """The deck order (the shuffle's values) never reaches a player or a spectator while the
    game runs: not in WatchGame events, not in SubmitAction results, not in views."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 2)
            for token in ("", created.player_tokens[0]):
                request = engine_pb2.WatchGameRequest(game_id=created.game_id, player_token=token)
                shuffles = 0
                async for update in stub.WatchGame(request):
                    if update.event.type == "ChanceResolved":
                        payload = json.loads(update.event.payload)
                        if payload["kind"] == "shuffle":
                            shuffles += 1
                            assert payload["values"] == []
                    if update.HasField("view"):
                        assert not update.view.lords_of_vegas.deck
                        if shuffles:
                            break
                assert shuffles == 1
            got = await stub.GetGame(
                engine_pb2.GetGameRequest(
                    game_id=created.game_id, player_token=created.player_tokens[1]
                )
            )
            assert got.status == engine_pb2.GAME_STATUS_ACTIVE
            assert not got.view.lords_of_vegas.deck
            assert got.view.lords_of_vegas.cards_left > 0

    asyncio.run(run())
