"""WatchGame in bursts mode (issue 17: half the stream messages): one message per burst, the
same events, redactions, views and legal actions as one event per message, and a long
catch-up split into messages of at most 128 events; and settled bursts (issue 28): a move
and the roll it owes in one message."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.seats.signing import signed_submit
from boulevard.seats.watching import last_event
from tests.e2e.conftest import Platform
from tests.e2e.test_games import create
from tests.support.keys import seat_key

pytestmark = pytest.mark.e2e

MOVES = 90  # enough events (with each move's CommandAccepted) for a catch-up past 128
BURST_MAX = 128
SETTLED_MOVES = 30  # Las Vegas moves for the settled test (each ends in the next roll)


async def collect(
    stub: engine_pb2_grpc.EngineServiceStub,
    game_id: str,
    token: str,
    bursts: bool,
    into: list[engine_pb2.WatchGameResponse],
) -> None:
    request = engine_pb2.WatchGameRequest(game_id=game_id, player_token=token, bursts=bursts)
    async for update in stub.WatchGame(request):
        into.append(update)


def events_of(updates: list[engine_pb2.WatchGameResponse]) -> list[bytes]:
    return [e.SerializeToString() for u in updates for e in (u.events if u.events else [u.event])]


def views_by_version(updates: list[engine_pb2.WatchGameResponse]) -> dict[int, Any]:
    return {
        last_event(u).version: (u.view.SerializeToString(), list(u.to_act), list(u.legal_actions))
        for u in updates
        if u.HasField("view")
    }


async def play(stub: engine_pb2_grpc.EngineServiceStub, game_id: str, tokens: list[str]) -> int:
    """MOVES moves, each the first legal action of the first seat that has one."""
    version = 0
    for _ in range(MOVES):
        for seat, token in enumerate(tokens):
            legal = await stub.ListLegalActions(
                engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=token)
            )
            if legal.actions:
                reply = await stub.SubmitAction(
                    signed_submit(
                        game_id, token, seat, seat_key(seat), legal.actions[0], legal.version
                    )
                )
                version = reply.version
                break
        else:
            break  # the game is over (or waits on chance): what was played is enough
    return version


def test_bursts_carry_what_single_events_carry(platform: Platform) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "lords_of_vegas", 2)
            game_id, tokens = created.game_id, list(created.player_tokens)
            seen: dict[tuple[str, bool], list[engine_pb2.WatchGameResponse]] = {
                (who, bursts): [] for who in ("spectator", "seat0") for bursts in (False, True)
            }
            watchers = [
                asyncio.create_task(
                    collect(stub, game_id, tokens[0] if who == "seat0" else "", bursts, updates)
                )
                for (who, bursts), updates in seen.items()
            ]
            version = await play(stub, game_id, tokens)
            assert version > BURST_MAX, f"the game reached only version {version}"
            for _ in range(400):  # let the streams reach the last version
                if all(u and last_event(u[-1]).version >= version for u in seen.values()):
                    break
                await asyncio.sleep(0.05)
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

            for who in ("spectator", "seat0"):
                single, bursts = seen[(who, False)], seen[(who, True)]
                # The same events, redacted alike, every version once, in order.
                assert events_of(bursts) == events_of(single)
                assert [last_event(u).version for u in single] == list(range(1, version + 1))
                assert all(not u.HasField("event") and u.events for u in bursts)
                assert all(len(u.events) <= BURST_MAX for u in bursts)
                assert len(bursts) < len(single), "bursts mode sent as many messages"
                # Views (with to_act and legal actions) agree wherever both streams drew one,
                # and both drew the last.
                views, burst_views = views_by_version(single), views_by_version(bursts)
                assert version in views and version in burst_views
                common = views.keys() & burst_views.keys()
                assert all(views[v] == burst_views[v] for v in common)
            # Legal actions only on the seat's own stream, in either mode.
            assert any(u.legal_actions for u in seen[("seat0", True)])
            assert not any(u.legal_actions for u in seen[("spectator", True)])

            # A catch-up from the start (every stream ended, so the feed reads the log anew)
            # comes in messages of at most 128 events, the view on the last only.
            catch_up: list[engine_pb2.WatchGameResponse] = []
            request = engine_pb2.WatchGameRequest(
                game_id=game_id, player_token=tokens[1], bursts=True
            )
            async for update in stub.WatchGame(request):
                catch_up.append(update)
                if last_event(update).version >= version:
                    break
            versions = [e.version for u in catch_up for e in u.events]
            assert versions == list(range(1, version + 1))
            assert all(len(u.events) <= BURST_MAX for u in catch_up)
            assert catch_up[-1].HasField("view")
            # The other seat's stream from version 50 on starts exactly there.
            request = engine_pb2.WatchGameRequest(
                game_id=game_id, player_token=tokens[1], bursts=True, from_version=50
            )
            async for update in stub.WatchGame(request):
                assert update.events[0].version == 50
                break

    asyncio.run(run())


def test_settled_bursts_hold_a_move_until_its_roll(platform: Platform) -> None:
    """`settled` through the platform (the dice service rolling, the feed reading NATS): the
    same events in order as plain bursts and the same views where both drew one, and every
    settled view past the opening is of a game that waits for a player (or is over). How a
    burst is held is tested with the log fed one event at a time:
    tests/unit/engine/test_watch_settled.py."""

    async def run() -> None:
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            stub = engine_pb2_grpc.EngineServiceStub(channel)
            created = await create(stub, "las_vegas", 2)
            game_id, tokens = created.game_id, list(created.player_tokens)
            seen: dict[tuple[str, bool], list[engine_pb2.WatchGameResponse]] = {
                (who, settled): [] for who in ("spectator", "seat0") for settled in (False, True)
            }

            async def watch(token: str, settled: bool, into: list[Any]) -> None:
                request = engine_pb2.WatchGameRequest(
                    game_id=game_id, player_token=token, bursts=True, settled=settled
                )
                async for update in stub.WatchGame(request):
                    into.append(update)

            watchers = [
                asyncio.create_task(watch(tokens[0] if who == "seat0" else "", settled, updates))
                for (who, settled), updates in seen.items()
            ]
            version = 0
            for _ in range(SETTLED_MOVES):
                for seat, token in enumerate(tokens):
                    legal = await stub.ListLegalActions(
                        engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=token)
                    )
                    if legal.actions:
                        reply = await stub.SubmitAction(
                            signed_submit(
                                game_id,
                                token,
                                seat,
                                seat_key(seat),
                                legal.actions[0],
                                legal.version,
                            )
                        )
                        version = reply.version
                        break
                else:
                    break  # the game is over
            for _ in range(400):  # let the streams reach the last version
                if all(u and last_event(u[-1]).version >= version for u in seen.values()):
                    break
                await asyncio.sleep(0.05)
            for task in watchers:
                task.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)

            for who in ("spectator", "seat0"):
                bursts, settled = seen[(who, False)], seen[(who, True)]
                assert events_of(settled) == events_of(bursts)
                versions = [e.version for u in settled for e in u.events]
                assert versions == list(range(1, version + 1))
                views, settled_views = views_by_version(bursts), views_by_version(settled)
                assert version in settled_views
                assert all(settled_views[v] == views[v] for v in settled_views.keys() & views)
                # Once a move is made (the opening over: a catch-up may end inside it, where
                # the game waits for seeds), every settled view has a seat to act, or ends it.
                moved = min(
                    e.version for u in settled for e in u.events if e.type == "CommandAccepted"
                )
                for u in settled:
                    end = last_event(u)
                    if end.version > moved and end.type != "GameFinished":
                        assert u.to_act, f"a settled view at {end.version} waits on no one"
            assert any(u.legal_actions for u in seen[("seat0", True)])
            assert not any(u.legal_actions for u in seen[("spectator", True)])

            # A catch-up from the start, settled: every version once, in order.
            catch_up: list[engine_pb2.WatchGameResponse] = []
            request = engine_pb2.WatchGameRequest(
                game_id=game_id, player_token=tokens[1], bursts=True, settled=True
            )
            async for update in stub.WatchGame(request):
                catch_up.append(update)
                if last_event(update).version >= version:
                    break
            assert [e.version for u in catch_up for e in u.events] == list(range(1, version + 1))
            assert catch_up[-1].HasField("view")
            assert catch_up[-1].to_act or last_event(catch_up[-1]).type == "GameFinished"

    asyncio.run(run())
