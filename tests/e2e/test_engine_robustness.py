"""The engine under crashes, races and bad input, with every service a real process."""

from __future__ import annotations

import asyncio
import hashlib
import random
import uuid

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.contract.mapping import command_to_action
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.games import get_game
from boulevard.games.codec import Codec
from boulevard.messaging.server import free_port
from boulevard.seats.player import SeatPlayer
from boulevard.seats.signing import sign_submit, signed_submit
from services.engine.sessions import Session
from tests.e2e.conftest import OPERATOR, Platform
from tests.e2e.test_games import create
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle, connect_as
from tests.support.processes import ServiceProcess

pytestmark = pytest.mark.e2e


async def replay_hash(server: NatsHandle, game_id: str) -> tuple[str, int, list[str]]:
    """A pure in-process replay of the game's log: hash of the final state, the version,
    and the event ids (to look for duplicates)."""
    nc = await connect_as(server)
    try:
        store = JetStreamEventStore(nc, "GAMES", "game")
        recorded = await store.read(game_id)
    finally:
        await nc.close()
    from boulevard.api.v1 import events_pb2

    envelopes = [events_pb2.EventEnvelope.FromString(r.data) for r in recorded]
    first = Codec(()).loads(envelopes[0].payload)
    session = Session.new(game_id, first)
    for env in envelopes:
        session.apply_envelope(env)
    digest = hashlib.sha256(session.snapshot()).hexdigest()
    return digest, session.version, [e.event_id for e in envelopes]


async def engine_hash(address: str, game_id: str) -> tuple[str, int]:
    async with grpc.aio.insecure_channel(address) as channel:
        got = await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
            engine_pb2.GetGameRequest(game_id=game_id)
        )
    return got.view.rendered, got.version


def test_engine_killed_five_times_mid_game(platform: Platform) -> None:
    """SIGKILL the engine at random moments of one game; the bots reconnect and carry on;
    the final state equals a pure replay of the log, with no event duplicated or lost."""

    async def run() -> None:
        rng = random.Random(5)
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 3)
        game = get_game("lords_of_vegas")
        kills = 0
        while True:
            async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                players = [
                    SeatPlayer(
                        stub,
                        created.game_id,
                        game.name,
                        seat,
                        token,
                        game.bots["heuristic"],
                        random.Random(seat),
                        seat_key(seat),
                    )
                    for seat, token in enumerate(created.player_tokens)
                ]
                play = asyncio.gather(*(p.play() for p in players))
                if kills >= 5:
                    await play
                    break
                await asyncio.sleep(rng.uniform(0.3, 1.5))
                platform.services["engine"].kill()
                kills += 1
                await asyncio.gather(play, return_exceptions=True)
            await platform.astart("engine")
        digest, version, ids = await replay_hash(platform.nats, created.game_id)
        assert len(ids) == len(set(ids)) == version
        await platform.arestart("engine")  # a cold engine rebuilds the same game from the log
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            got = await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
                engine_pb2.GetGameRequest(game_id=created.game_id)
            )
        assert got.status == engine_pb2.GAME_STATUS_FINISHED
        assert got.version == version
        digest2, _, _ = await replay_hash(platform.nats, created.game_id)
        assert digest2 == digest

    asyncio.run(run())


def test_two_replicas_race_one_wins_no_fork(platform: Platform) -> None:
    second = ServiceProcess(
        "engine",
        {
            **platform.env,
            "BOULEVARD_ENGINE_PORT": str(free_port()),
            "BOULEVARD_ENGINE_METRICS_PORT": str(free_port()),
        },
        platform.log_dir,
    )
    second.log_path = platform.log_dir / "engine-2.log"
    second.start()
    try:
        from boulevard.cli.up import wait_serving

        async def run() -> None:
            await wait_serving(second.address, 30, second.process)
            async with (
                grpc.aio.insecure_channel(platform.address("engine")) as a,
                grpc.aio.insecure_channel(second.address) as b,
            ):
                one, two = (
                    engine_pb2_grpc.EngineServiceStub(a),
                    engine_pb2_grpc.EngineServiceStub(b),
                )
                created = await create(one, "las_vegas", 2)
                for _ in range(10):
                    # Both replicas load the game, then both try different moves at once.
                    tokens = created.player_tokens
                    legal, actor, actor_seat = None, "", 0
                    for actor_seat, token in enumerate(tokens):  # noqa: B007
                        req = engine_pb2.ListLegalActionsRequest(
                            game_id=created.game_id, player_token=token
                        )
                        legal = await one.ListLegalActions(req)
                        await two.ListLegalActions(req)
                        if legal.actions:
                            actor = token
                            break
                    assert legal is not None and len(legal.actions) >= 1
                    actions = list(legal.actions)
                    calls = [
                        stub.SubmitAction(
                            signed_submit(
                                created.game_id,
                                actor,
                                actor_seat,
                                seat_key(actor_seat),
                                actions[i % len(actions)],
                                legal.version,
                                uuid.uuid4().hex,
                            )
                        )
                        for i, stub in enumerate((one, two))
                    ]
                    results = await asyncio.gather(*calls, return_exceptions=True)
                    wins = [r for r in results if not isinstance(r, Exception)]
                    losses = [r for r in results if isinstance(r, Exception)]
                    assert len(wins) >= 1, [(e.code(), e.details()) for e in losses]
                    for loss in losses:
                        assert isinstance(loss, grpc.aio.AioRpcError)
                        assert loss.code() == grpc.StatusCode.ABORTED, loss.details()
                    if len(wins) == 2:  # only when both chose the same move and it was a retry
                        assert wins[0].version == wins[1].version
                _, version, ids = await replay_hash(platform.nats, created.game_id)
                assert len(ids) == len(set(ids)) == version

        asyncio.run(run())
    finally:
        second.stop()


def test_bad_input_gets_precise_status_and_changes_nothing(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2)
            other = await create(stub, "las_vegas", 2)
            gid, tokens = created.game_id, created.player_tokens
            before = await stub.GetGame(engine_pb2.GetGameRequest(game_id=gid))
            seat = 0
            for s, t in enumerate(tokens):
                offered = await stub.ListLegalActions(
                    engine_pb2.ListLegalActionsRequest(game_id=gid, player_token=t)
                )
                if offered.actions:
                    seat = s
                    break
            legal = await stub.ListLegalActions(
                engine_pb2.ListLegalActionsRequest(game_id=gid, player_token=tokens[seat])
            )
            good = legal.actions[0]
            game = get_game("las_vegas")
            from boulevard.games.las_vegas.types import PlaceDice

            # Out of turn: the other player, with their own token, places dice now.
            idle = 1 - seat
            illegal = command_to_action(game, PlaceDice(seat=idle, number=1))

            async def code_of(request: engine_pb2.SubmitActionRequest) -> grpc.StatusCode:
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await stub.SubmitAction(request)
                assert info.value.details()  # a readable message
                return info.value.code()

            def req(signer: int | None = None, **kw: object) -> engine_pb2.SubmitActionRequest:
                """A request signed by `signer`'s seat key (default: the seat's own)."""
                base: dict[str, object] = dict(
                    game_id=gid,
                    player_token=tokens[seat],
                    action=good,
                    expected_version=legal.version,
                    idempotency_key=uuid.uuid4().hex,
                )
                base.update(kw)
                request = engine_pb2.SubmitActionRequest(**base)  # type: ignore[arg-type]
                signer = seat if signer is None else signer
                return sign_submit(request, signer, seat_key(signer))

            assert await code_of(req(game_id="no-such-game")) in (
                grpc.StatusCode.PERMISSION_DENIED,
                grpc.StatusCode.NOT_FOUND,
            )
            assert await code_of(req(expected_version=legal.version + 7)) == grpc.StatusCode.ABORTED
            assert (
                await code_of(req(action=engine_pb2.Action())) == grpc.StatusCode.INVALID_ARGUMENT
            )
            out_of_turn = req(idle, action=illegal, player_token=tokens[idle])
            assert await code_of(out_of_turn) == grpc.StatusCode.FAILED_PRECONDITION
            assert (
                await code_of(req(player_token=tokens[1 - seat]))
                == grpc.StatusCode.PERMISSION_DENIED
            )
            assert (
                await code_of(req(player_token=other.player_tokens[seat]))
                == grpc.StatusCode.PERMISSION_DENIED
            )
            assert await code_of(req(player_token="")) == grpc.StatusCode.UNAUTHENTICATED
            # The move must be signed by the seat's own key, over exactly these bytes.
            unsigned = req()
            unsigned.ClearField("signature")
            assert await code_of(unsigned) == grpc.StatusCode.UNAUTHENTICATED
            assert await code_of(req(signer=idle)) == grpc.StatusCode.PERMISSION_DENIED
            replayed = req()
            replayed.expected_version += 1  # changed after signing
            assert await code_of(replayed) == grpc.StatusCode.PERMISSION_DENIED
            no_key = req()
            no_key.idempotency_key = ""
            assert await code_of(no_key) == grpc.StatusCode.INVALID_ARGUMENT
            assert (
                await code_of(req(player_token="v1.x.0.eA.forged"))
                == grpc.StatusCode.UNAUTHENTICATED
            )
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.GetGame(engine_pb2.GetGameRequest(game_id="no-such-game"))
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(request_id="x", game="chess"),
                    metadata=(("authorization", f"Bearer {OPERATOR}"),),
                )
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CreateGame(
                    engine_pb2.CreateGameRequest(request_id="y", game="las_vegas")
                )
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            after = await stub.GetGame(engine_pb2.GetGameRequest(game_id=gid))
            assert after.version == before.version
            assert after.view == before.view

    asyncio.run(run())
