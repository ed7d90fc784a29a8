"""A matchmade game's seats against the match the matchmaker formed (issue 25), on a real
nats-server of the test's own: the matchmaker serves its record of a formed match
(GetMatch), and `audit game --matchmaking` compares the game's GameCreated with it. Someone
holding the matchmaker's NATS identity publishes MatchFormed messages the engine creates
games from: one the record agrees with passes; one whose seat key the record does not
hold, and one naming a match never formed, fail at version 1."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from nats.aio.client import Client as NATS

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2, matchmaking_pb2
from boulevard.audit.game_log import GameAuditFailed
from boulevard.audit.signing import SigningKey
from boulevard.cli.audit_game import Addresses, audit_one
from boulevard.fairness import client_seed_commitment
from tests.integration.engine.support import running_dice, start_engine
from tests.integration.matchmaking.support import eventually, mm_settings, running_mm
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration

ENGINE = SigningKey(bytes([51]) * 32)


def match(match_id: str, keys: tuple[str, str]) -> events_pb2.MatchFormed:
    return events_pb2.MatchFormed(
        match_id=match_id,
        game="las_vegas",
        seats=[
            events_pb2.MatchSeat(
                seat=i, player_id=f"p{i}", public_key=keys[i],
                client_seed_commitment=client_seed_commitment(f"{match_id}:{i}"),
            )
            for i in range(2)
        ],
        time_unix_ms=1_000,
    )  # fmt: skip


async def record(nc: NATS, formed: events_pb2.MatchFormed) -> None:
    """The matchmaker's record of a formed match, as it keeps it (KV `matches`)."""
    kv = await nc.jetstream().key_value("matches")
    done = matchmaking_pb2.MatchRecord(
        match_id=formed.match_id, game=formed.game, status=matchmaking_pb2.MATCH_STATUS_DONE,
        seats=formed.seats, ticket_ids=["t0", "t1"], created_unix_ms=formed.time_unix_ms,
    )  # fmt: skip
    await kv.put(f"m.{formed.match_id}", done.SerializeToString())


async def test_a_matchmade_games_seats_must_be_the_formed_matchs(
    nc: NATS, nats_server: NatsHandle, tmp_path: Path
) -> None:
    honest = (seat_key(0).public_hex, seat_key(1).public_hex)
    swapped = (SigningKey.generate().public_hex, seat_key(1).public_hex)
    games = {
        "mhonest": (match("mhonest", honest), match("mhonest", honest)),
        "mswapped": (match("mswapped", swapped), match("mswapped", honest)),
        "mnever": (match("mnever", honest), None),
    }
    async with running_dice(nats_server, tmp_path), running_mm(mm_settings(nats_server.url)) as mm:
        engine = await start_engine(nats_server, tmp_path, ENGINE)
        try:
            publisher = await nats_server.connect("matchmaking")
            try:
                for published, recorded in games.values():
                    if recorded is not None:
                        await record(nc, recorded)
                    await publisher.jetstream().publish(
                        "mm.match_formed", published.SerializeToString()
                    )
            finally:
                await publisher.close()
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)

                async def created() -> bool:
                    try:
                        for game_id in games:
                            await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                    except grpc.aio.AioRpcError:
                        return False
                    return True

                await eventually(created, within=20)
            where = Addresses(engine.address, None, None, matchmaking=mm.address)
            report = await audit_one("mhonest", where)
            assert report.versions >= 1
            with pytest.raises(GameAuditFailed, match="seats are not the match's: seat 0") as a:
                await audit_one("mswapped", where)
            assert a.value.version == 1
            with pytest.raises(GameAuditFailed, match="which the matchmaker never formed") as b:
                await audit_one("mnever", where)
            assert b.value.version == 1
            # Without the matchmaker's word the swapped seat is not caught: the game alone
            # is consistent.
            await audit_one("mswapped", Addresses(engine.address, None, None))
        finally:
            await engine.stop()
