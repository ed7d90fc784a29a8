"""A hostile player against the real services (each its own process, real nats-server):
every way issue 11 found to act as someone else, reproduced and shown refused.

- queue in another player's name;
- replay a victim's (player, request id) to get their ticket and seat token;
- read, watch or cancel another player's ticket;
- move with a forged, expired or other game's seat token;
- list games to learn who plays;
- CreateGame with a request id equal to an existing game's id;
- operator calls without the exact `Bearer ` scheme, or with a player's token;
- bearer tokens signed by another key, with `alg: none`, for another audience or issuer.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, matchmaking_pb2, matchmaking_pb2_grpc
from boulevard.platform.auth import PlayerClaims, issue_token, verify_token
from boulevard.platform.identity import LocalIssuer, bearer
from boulevard.seats.signing import signed_submit
from tests.e2e.conftest import OPERATOR, TOKEN_KEY, Platform
from tests.support.identity import mint, operator_md, player_md, session_issuer
from tests.support.keys import TEST_PUBLIC_KEY, seat_key

pytestmark = pytest.mark.e2e

OPERATOR_MD = bearer(OPERATOR)
pb = matchmaking_pb2


async def status_of(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value.code(), info.value.details() or ""


def name() -> str:
    return f"p-{uuid.uuid4().hex[:10]}"


def seats(*players: str) -> list[engine_pb2.SeatAssignment]:
    return [
        engine_pb2.SeatAssignment(seat=i, player_id=p, public_key=seat_key(i).public_hex)
        for i, p in enumerate(players)
    ]


def test_nobody_queues_in_another_players_name(platform: Platform) -> None:
    victim, mallory = name(), name()

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("matchmaking")) as ch:
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
            in_her_name = pb.CreateTicketRequest(
                player_id=victim, game="las_vegas", min_seats=5, public_key=TEST_PUBLIC_KEY
            )
            code, detail = await status_of(
                mm.CreateTicket(in_her_name, metadata=player_md(mallory))
            )
            assert code == grpc.StatusCode.PERMISSION_DENIED and "your own" in detail
            code, _ = await status_of(mm.CreateTicket(in_her_name))  # no token at all
            assert code == grpc.StatusCode.UNAUTHENTICATED
            # The victim is not blocked (before, she got FAILED_PRECONDITION here).
            mine = await mm.CreateTicket(in_her_name, metadata=player_md(victim))
            assert mine.ticket.player_id == victim
            # An empty player_id means "me".
            own = await mm.CreateTicket(
                pb.CreateTicketRequest(game="las_vegas", min_seats=5, public_key=TEST_PUBLIC_KEY),
                metadata=player_md(mallory),
            )
            assert own.ticket.player_id == mallory

    asyncio.run(run())


def test_a_replayed_request_id_never_yields_the_victims_ticket_or_token(
    platform: Platform,
) -> None:
    victim, mallory = name(), name()

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("matchmaking")) as ch:
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
            request = pb.CreateTicketRequest(
                request_id="r1", game="las_vegas", min_seats=2, max_seats=2,
                bot_fill_after_seconds=1, public_key=TEST_PUBLIC_KEY,
            )  # fmt: skip
            hers = (await mm.CreateTicket(request, metadata=player_md(victim))).ticket
            assigned = None
            async for update in mm.WatchTicket(
                pb.WatchTicketRequest(ticket_id=hers.ticket_id),
                metadata=player_md(victim),
                timeout=60,
            ):
                assigned = update.ticket
            assert assigned is not None and assigned.status == pb.TICKET_STATUS_ASSIGNED
            assert verify_token(TOKEN_KEY.encode(), assigned.player_token).player_id == victim

            # The same request, replayed by mallory, is mallory's own new ticket.
            replay = pb.CreateTicketRequest()
            replay.CopyFrom(request)
            replay.player_id = ""
            got = (await mm.CreateTicket(replay, metadata=player_md(mallory))).ticket
            assert got.ticket_id != hers.ticket_id and got.player_id == mallory
            assert not got.player_token and got.status == pb.TICKET_STATUS_WAITING
            replay.player_id = victim
            code, _ = await status_of(mm.CreateTicket(replay, metadata=player_md(mallory)))
            assert code == grpc.StatusCode.PERMISSION_DENIED

            # Her ticket id alone gives mallory nothing: no read, no watch, no cancel.
            by_id = pb.GetTicketRequest(ticket_id=hers.ticket_id)
            for call in (
                mm.GetTicket(by_id, metadata=player_md(mallory)),
                mm.CancelTicket(
                    pb.CancelTicketRequest(ticket_id=hers.ticket_id), metadata=player_md(mallory)
                ),
            ):
                assert (await status_of(call))[0] == grpc.StatusCode.PERMISSION_DENIED
            watch = mm.WatchTicket(
                pb.WatchTicketRequest(ticket_id=hers.ticket_id), metadata=player_md(mallory)
            )
            assert (await status_of(watch.read()))[0] == grpc.StatusCode.PERMISSION_DENIED
            assert (await status_of(mm.GetTicket(by_id)))[0] == grpc.StatusCode.UNAUTHENTICATED
            # An operator sees the ticket, but not the seat token: that is the owner's.
            seen = (await mm.GetTicket(by_id, metadata=OPERATOR_MD)).ticket
            assert seen.player_id == victim and seen.game_id and not seen.player_token
            # The owner gets a fresh token with every read.
            again = (await mm.GetTicket(by_id, metadata=player_md(victim))).ticket
            assert verify_token(TOKEN_KEY.encode(), again.player_token).seat == assigned.seat

    asyncio.run(run())


def test_moves_need_a_genuine_current_token_for_this_game(platform: Platform) -> None:
    alice, bob, carol = name(), name(), name()

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as ch:
            engine = engine_pb2_grpc.EngineServiceStub(ch)
            request = engine_pb2.CreateGameRequest(
                request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(alice, bob)
            )
            created = await engine.CreateGame(request, metadata=OPERATOR_MD)
            other = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(carol, bob)
                ),
                metadata=OPERATOR_MD,
            )
            gid = created.game_id
            before = await engine.GetGame(engine_pb2.GetGameRequest(game_id=gid))
            (seat,) = before.to_act
            legal = await engine.ListLegalActions(
                engine_pb2.ListLegalActionsRequest(
                    game_id=gid, player_token=created.player_tokens[seat]
                )
            )
            action = legal.actions[0]

            def submit(token: str) -> Awaitable[Any]:
                # Signed with the seat's key: only the token is wrong in the refused calls.
                return engine.SubmitAction(
                    signed_submit(gid, token, seat, seat_key(seat), action, before.version)
                )

            genuine = created.player_tokens[seat]
            body, _mac = genuine.rsplit(".", 1)
            forged = f"{body}.{'A' * 43}"
            player = (alice, bob)[seat]
            expired = issue_token(
                TOKEN_KEY.encode(), PlayerClaims(gid, seat, player), ttl_seconds=-5
            )
            other_key = issue_token(b"not the platform key", PlayerClaims(gid, seat, player))
            for token in (forged, other_key, "", "v1.x.0.eA.forged"):
                assert (await status_of(submit(token)))[0] == grpc.StatusCode.UNAUTHENTICATED
            code, detail = await status_of(submit(expired))
            assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in detail
            code, _ = await status_of(submit(other.player_tokens[1]))  # bob's, other game
            assert code == grpc.StatusCode.PERMISSION_DENIED
            after = await engine.GetGame(engine_pb2.GetGameRequest(game_id=gid))
            assert after.version == before.version

            # The seat's owner renews an expired token with their own bearer token.
            renew = engine_pb2.RenewPlayerTokenRequest(game_id=gid)
            fresh = await engine.RenewPlayerToken(renew, metadata=player_md(player))
            assert fresh.seat == seat
            assert fresh.expires_unix_ms > time.time() * 1000
            assert (await submit(fresh.player_token)).version > before.version
            # Nobody else can: not a stranger, not without a token.
            code, _ = await status_of(engine.RenewPlayerToken(renew, metadata=player_md(carol)))
            assert code == grpc.StatusCode.PERMISSION_DENIED
            code, _ = await status_of(engine.RenewPlayerToken(renew))
            assert code == grpc.StatusCode.UNAUTHENTICATED

    asyncio.run(run())


def test_list_games_shows_who_plays_to_operators_only(platform: Platform) -> None:
    alice, bob, stranger = name(), name(), name()

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as ch:
            engine = engine_pb2_grpc.EngineServiceStub(ch)
            created = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(alice, bob)
                ),
                metadata=OPERATOR_MD,
            )

            async def listed(metadata: Any, **filters: Any) -> engine_pb2.GameSummary:
                token, found = "", []
                while True:
                    reply = await engine.ListGames(
                        engine_pb2.ListGamesRequest(page_size=500, page_token=token, **filters),
                        metadata=metadata,
                    )
                    found += [g for g in reply.games if g.game_id == created.game_id]
                    token = reply.next_page_token
                    if not token:
                        break
                assert len(found) == 1, (filters, found)
                return found[0]

            for who in ((), player_md(stranger), player_md(alice)):
                assert list((await listed(who)).player_ids) == []
            assert list((await listed(OPERATOR_MD)).player_ids) == [alice, bob]
            assert list((await listed(OPERATOR_MD, player_id=bob)).player_ids) == [alice, bob]
            # A player may list their own games; asking who else plays is refused.
            assert (await listed(player_md(alice), player_id=alice)).game_id == created.game_id
            for who in ((), player_md(stranger)):
                code, _ = await status_of(
                    engine.ListGames(engine_pb2.ListGamesRequest(player_id=alice), metadata=who)
                )
                assert code == grpc.StatusCode.PERMISSION_DENIED

    asyncio.run(run())


def test_create_game_cannot_alias_another_game_or_seat_a_player_twice(
    platform: Platform,
) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as ch:
            engine = engine_pb2_grpc.EngineServiceStub(ch)
            victim = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(name(), name())
                ),
                metadata=OPERATOR_MD,
            )
            # An operator who learned the game id asks for a game with that request id.
            mallory_op = operator_md("mallory-operator")
            aliased = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=victim.game_id, game="las_vegas", seats=seats(name(), name())
                ),
                metadata=mallory_op,
            )
            assert aliased.game_id != victim.game_id
            assert not set(aliased.player_tokens) & set(victim.player_tokens)
            # The same for the operator who made it: request ids and game ids never mix.
            again = await engine.CreateGame(
                engine_pb2.CreateGameRequest(
                    request_id=victim.game_id, game="las_vegas", seats=seats(name(), name())
                ),
                metadata=OPERATOR_MD,
            )
            assert again.game_id not in (victim.game_id, aliased.game_id)
            twice = name()
            code, detail = await status_of(
                engine.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(twice, twice)
                    ),
                    metadata=OPERATOR_MD,
                )
            )
            assert code == grpc.StatusCode.INVALID_ARGUMENT and "one seat" in detail

    asyncio.run(run())


def foreign_tokens(tmp_path: Path) -> dict[str, str]:
    """Bearer tokens the platform must refuse, each for its own reason."""
    ours = session_issuer()
    kid = json.loads(ours.jwks_path.read_text())["keys"][-1]["kid"]
    now = int(time.time())
    claims = {
        "iss": ours.issuer, "aud": ours.audience, "sub": "olga", "roles": ["operator"],
        "iat": now, "exp": now + 600,
    }  # fmt: skip
    other = LocalIssuer.ensure(tmp_path / "other-issuer")  # same names, another key
    return {
        "signed by another key": other.mint("olga", ("operator",)),
        "another key under our kid": jwt.encode(
            claims, Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": kid}
        ),
        "alg none": jwt.encode(claims, None, algorithm="none", headers={"kid": kid}),
        "wrong audience": mint("olga", ("operator",), aud="another-platform"),
        "wrong issuer": mint("olga", ("operator",), iss="https://evil.example"),
        "expired": mint("olga", ("operator",), ttl=-60),
    }


def test_operator_calls_need_a_genuine_operator_bearer_token(
    platform: Platform, tmp_path: Path
) -> None:
    async def run() -> None:
        async with (
            grpc.aio.insecure_channel(platform.address("engine")) as ch,
            grpc.aio.insecure_channel(platform.address("matchmaking")) as mch,
        ):
            engine = engine_pb2_grpc.EngineServiceStub(ch)
            mm = matchmaking_pb2_grpc.MatchmakingServiceStub(mch)

            def create(metadata: Any) -> Awaitable[Any]:
                return engine.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id=uuid.uuid4().hex, game="las_vegas", seats=seats(name(), name())
                    ),
                    metadata=metadata,
                )

            unauthenticated = [
                (("authorization", OPERATOR),),  # the token without "Bearer "
                (("authorization", f"bearer {OPERATOR}"),),
                (("authorization", f"Bearer  {OPERATOR}"),),
                (("authorization", f"Basic {OPERATOR}"),),
                (),
            ]
            for metadata in unauthenticated:
                assert (await status_of(create(metadata)))[0] == grpc.StatusCode.UNAUTHENTICATED
            code, detail = await status_of(create(player_md(name())))
            assert code == grpc.StatusCode.PERMISSION_DENIED and "operator" in detail
            for why, token in foreign_tokens(tmp_path).items():
                code, _ = await status_of(create(bearer(token)))
                assert code == grpc.StatusCode.UNAUTHENTICATED, why
                ticket = pb.CreateTicketRequest(
                    game="las_vegas", min_seats=5, public_key=TEST_PUBLIC_KEY
                )
                code, _ = await status_of(mm.CreateTicket(ticket, metadata=bearer(token)))
                assert code == grpc.StatusCode.UNAUTHENTICATED, why
            assert (await create(OPERATOR_MD)).game_id

    asyncio.run(run())
