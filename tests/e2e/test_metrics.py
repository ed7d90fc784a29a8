"""Every service serves Prometheus metrics, and after a game the counters moved by exactly
what happened: the events the game appended, the dice it drew, the entries the ledger
posted, the match matchmaking formed, the gRPC calls by method and code."""

from __future__ import annotations

import asyncio
import contextlib
import random
import urllib.request
import uuid

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from boulevard.games import get_game
from boulevard.seats.player import SeatPlayer, play_game
from tests.e2e.conftest import Platform
from tests.e2e.test_games import OPERATOR_MD, create, wait_reconciled
from tests.support.identity import player_md
from tests.support.keys import TEST_KEY, TEST_PUBLIC_KEY, seat_keys
from tests.support.processes import SERVICES, metrics_url

pytestmark = pytest.mark.e2e

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(platform: Platform, service: str) -> Samples:
    with urllib.request.urlopen(metrics_url(platform.env, service), timeout=5) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples named `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def match_and_play(platform: Platform) -> tuple[str, int]:
    """Alice asks matchmaking for a 3-seat Las Vegas game with bot fill and plays her seat;
    the game id and her moves."""
    async with grpc.aio.insecure_channel(platform.address("matchmaking")) as channel:
        mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        created = await mm.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                request_id=uuid.uuid4().hex,
                game="las_vegas",
                min_seats=3,
                max_seats=3,
                bot_fill_after_seconds=1,
                public_key=TEST_PUBLIC_KEY,
            ),
            metadata=player_md("alice-metrics"),
        )
        async for update in mm.WatchTicket(
            matchmaking_pb2.WatchTicketRequest(ticket_id=created.ticket.ticket_id),
            timeout=60,
            metadata=player_md("alice-metrics"),
        ):
            if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                ticket = update.ticket
                break
    game = get_game("las_vegas")
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        for _ in range(100):  # the engine creates the game from MatchFormed, just after
            try:
                await engine_pb2_grpc.EngineServiceStub(channel).GetGame(
                    engine_pb2.GetGameRequest(game_id=ticket.game_id)
                )
                break
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.NOT_FOUND
                await asyncio.sleep(0.1)
        alice = SeatPlayer(
            engine_pb2_grpc.EngineServiceStub(channel), ticket.game_id, game.name, ticket.seat,
            ticket.player_token, game.bots["heuristic"], random.Random(1), TEST_KEY,
        )  # fmt: skip
        await asyncio.wait_for(alice.play(), 120)
    return ticket.game_id, alice.moves


async def quiet_queues(platform: Platform) -> None:
    """Earlier tests on this shared platform leave tickets queued (the fuzz test's, some with
    a late bot fill), whose matches would land in this test's counts: an operator cancels
    every waiting ticket first, and matches being formed are let finish."""
    async with grpc.aio.insecure_channel(platform.address("matchmaking")) as channel:
        mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        for _ in range(300):
            busy, token = False, ""
            while True:
                page = await mm.ListTickets(
                    matchmaking_pb2.ListTicketsRequest(page_size=1000, page_token=token),
                    metadata=OPERATOR_MD,
                )
                for ticket in page.tickets:
                    if ticket.status == matchmaking_pb2.TICKET_STATUS_WAITING:
                        busy = True
                        with contextlib.suppress(grpc.aio.AioRpcError):  # matched meanwhile
                            await mm.CancelTicket(
                                matchmaking_pb2.CancelTicketRequest(ticket_id=ticket.ticket_id),
                                metadata=OPERATOR_MD,
                            )
                    elif ticket.status == matchmaking_pb2.TICKET_STATUS_MATCHED:
                        busy = True
                token = page.next_page_token
                if not token:
                    break
            if not busy:
                return
            await asyncio.sleep(0.1)
        raise AssertionError("tickets were still waiting or being matched after 30 s")


def test_each_service_counts_what_a_game_did(platform: Platform) -> None:
    async def run() -> None:
        await quiet_queues(platform)
        before = {name: scrape(platform, name) for name in SERVICES}
        versions: dict[str, int] = {}
        async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
            engine = engine_pb2_grpc.EngineServiceStub(channel)
            made = await create(engine, "lords_of_vegas", 2)
            seats = await play_game(channel, made.game_id, "lords_of_vegas",
                                    list(made.player_tokens), seat_keys(2), seed=3)  # fmt: skip
            moves = sum(s.moves for s in seats)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await engine.GetGame(engine_pb2.GetGameRequest(game_id="no such game!"))
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            matched_id, alice_moves = await match_and_play(platform)
            for game_id in (made.game_id, matched_id):
                got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=game_id))
                assert got.status == engine_pb2.GAME_STATUS_FINISHED
                versions[game_id] = got.version
        outcomes = 0
        async with grpc.aio.insecure_channel(platform.address("dice")) as channel:
            dice = dice_pb2_grpc.DiceServiceStub(channel)
            for game_id in versions:
                verdict = await dice.VerifyGame(dice_pb2.VerifyGameRequest(game_id=game_id))
                assert verdict.ok, verdict.summary
                outcomes += verdict.checked
        entries = 0
        for game_id in versions:
            reconciled = await wait_reconciled(platform, game_id)
            assert reconciled.reconciled, reconciled.message
            entries += reconciled.entries
        after = {name: scrape(platform, name) for name in SERVICES}

        e0, e1 = before["engine"], after["engine"]
        appended = delta(e0, e1, "boulevard_events_appended_total")
        assert appended == sum(versions.values())  # every event of both games, once
        assert (
            delta(e0, e1, "boulevard_events_appended_total", game="lords_of_vegas")
            == (versions[made.game_id])
        )
        assert delta(e0, e1, "boulevard_games_started_total") == 2
        assert delta(e0, e1, "boulevard_games_finished_total") == 2
        appends = delta(e0, e1, "boulevard_event_append_seconds_count")
        assert 0 < appends <= appended
        assert delta(e0, e1, "boulevard_event_append_seconds_bucket", le="+Inf") == appends
        grpc_ok = "boulevard_grpc_requests_total"
        assert delta(e0, e1, grpc_ok, method="CreateGame", code="OK") == 1
        assert delta(e0, e1, grpc_ok, method="GetGame", code="INVALID_ARGUMENT") == 1
        # Each move is one accepted SubmitAction or SubmitActions message (the bots' stream,
        # counted per message); the bots' lost races are ABORTED.
        accepted = sum(
            delta(e0, e1, grpc_ok, method=m, code="OK") for m in ("SubmitAction", "SubmitActions")
        )
        assert accepted >= moves + alice_moves
        for m in ("SubmitAction", "SubmitActions"):
            assert delta(e0, e1, grpc_ok, method=m, code="UNKNOWN") == 0
        assert delta(e0, e1, grpc_ok, service="engine", code="INTERNAL") == 0

        d0, d1 = before["dice"], after["dice"]
        assert delta(d0, d1, "boulevard_dice_outcomes_total") == outcomes
        assert delta(d0, d1, "boulevard_dice_verifications_total", result="pass") == 2
        assert delta(d0, d1, "boulevard_dice_verifications_total", result="fail") == 0
        assert delta(d0, d1, grpc_ok, method="VerifyGame", code="OK") == 2

        l0, l1 = before["ledger"], after["ledger"]
        assert delta(l0, l1, "boulevard_ledger_entries_total") == entries
        assert delta(l0, l1, "boulevard_ledger_tree_size") == entries
        assert delta(l0, l1, "boulevard_ledger_rejections_total") == 0
        assert delta(l0, l1, "boulevard_ledger_reconciliations_total", result="pass") == 2

        m0, m1 = before["matchmaking"], after["matchmaking"]
        assert delta(m0, m1, "boulevard_matches_formed_total", game="las_vegas") == 1
        assert delta(m0, m1, "boulevard_matchmaking_time_to_match_seconds_count") == 1
        waited = delta(m0, m1, "boulevard_matchmaking_time_to_match_seconds_sum")
        assert 1.0 <= waited < 30  # bot fill after 1 s
        assert delta(m0, m1, grpc_ok, method="CreateTicket", code="OK") == 1

        for name in SERVICES:
            samples = after[name]
            assert value(samples, "boulevard_health_serving", service=name) == 1
            assert value(samples, "process_resident_memory_bytes") > 0
            assert value(samples, "process_cpu_seconds_total") > 0
            reconnects = ("boulevard_nats_reconnects_total", frozenset({("service", name)}))
            assert reconnects in samples

    asyncio.run(run())
