"""`boulevard games`, `game show`, `tickets` and `ledger balances` against the real platform
(a nats-server and the four services as processes), run as a person or a script runs them:
`python -m boulevard.cli.main …` finding the services through the BOULEVARD_*_PORT settings,
in both the human and the `--json` form. And as an attacker: no token, or another player's,
sees only what that identity may see."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, ledger_pb2, ledger_pb2_grpc
from boulevard.client.matchmaking import MatchmakingClient
from boulevard.fairness import client_seed_commitment
from boulevard.platform.identity import bearer
from boulevard.seats.player import play_game, reveal_seed
from tests.e2e.conftest import OPERATOR, Platform
from tests.support.identity import mint
from tests.support.keys import seat_key, seat_keys

pytestmark = pytest.mark.e2e

GAME = "las_vegas"


def cli(
    platform: Platform, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in platform.env.items() if k != "BOULEVARD_TOKEN"}
    env.pop("NO_COLOR", None)
    if token is not None:
        env["BOULEVARD_TOKEN"] = token
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def ok_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "\x1b[" not in done.stdout
    return json.loads(done.stdout)


async def play_one(platform: Platform, players: list[str]) -> engine_pb2.GetGameResponse:
    """A game made by the operator for `players`, played by bots to the end."""
    request_id = uuid.uuid4().hex
    seeds = [f"seed-{request_id}-{i}" for i in range(len(players))]
    async with grpc.aio.insecure_channel(platform.address("engine")) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await stub.CreateGame(
            engine_pb2.CreateGameRequest(
                request_id=request_id,
                game=GAME,
                seats=[
                    engine_pb2.SeatAssignment(
                        seat=i,
                        player_id=player,
                        client_seed_commitment=client_seed_commitment(seeds[i]),
                        public_key=seat_key(i).public_hex,
                    )
                    for i, player in enumerate(players)
                ],
            ),
            metadata=bearer(OPERATOR),
        )
        for seat, token in enumerate(created.player_tokens):
            await reveal_seed(stub, created.game_id, token, seeds[seat])
        await play_game(
            channel, created.game_id, GAME, list(created.player_tokens), seat_keys(len(players)),
            seed=3,
        )  # fmt: skip
        final: engine_pb2.GetGameResponse = await stub.GetGame(
            engine_pb2.GetGameRequest(game_id=created.game_id)
        )
        assert final.status == engine_pb2.GAME_STATUS_FINISHED
        return final


async def settled_balances(platform: Platform, game_id: str) -> ledger_pb2.GetBalancesResponse:
    """The game's book once the ledger has posted all of it (it follows GAMES)."""
    async with grpc.aio.insecure_channel(platform.address("ledger")) as channel:
        stub = ledger_pb2_grpc.LedgerServiceStub(channel)
        for _ in range(150):
            if (await stub.Reconcile(ledger_pb2.ReconcileRequest(game_id=game_id))).reconciled:
                break
            await asyncio.sleep(0.1)
        reply: ledger_pb2.GetBalancesResponse = await stub.GetBalances(
            ledger_pb2.GetBalancesRequest(book=game_id)
        )
        return reply


def test_games_game_show_and_ledger_balances_of_a_played_game(platform: Platform) -> None:
    tag = uuid.uuid4().hex[:8]
    players = [f"cli-{tag}-ann", f"cli-{tag}-bob"]
    final = asyncio.run(play_one(platform, players))
    game_id = final.game_id

    # games: the operator sees the game with its players, by the setting-found engine.
    listed = ok_json(cli(platform, "games", "--player", players[0], "--json", token=OPERATOR))
    assert listed["count"] == 1 and listed["truncated"] is False
    assert listed["games"] == [
        {"game_id": game_id, "game": GAME, "status": "finished", "version": final.version,
         "player_ids": players},
    ]  # fmt: skip
    human = cli(platform, "games", "--status", "finished", "--game", GAME, token=OPERATOR)
    assert human.returncode == 0, human.stderr
    row = next(line for line in human.stdout.splitlines() if game_id in line)
    assert "finished" in row and players[0] in row and players[1] in row
    assert "\x1b[" not in human.stdout  # piped: plain text

    # game show: the board the engine renders for a spectator, the names, the result.
    shown = ok_json(cli(platform, "game", "show", game_id, "--json"))
    assert shown["game_id"] == game_id and shown["status"] == "finished"
    assert shown["version"] == final.version and shown["player_ids"] == players
    assert shown["board"] == final.view.rendered and shown["board"]
    assert sorted(seat for place in shown["ranking"] for seat in place) == [0, 1]
    assert len(shown["scores"]) == 2
    board = cli(platform, "game", "show", game_id)
    assert board.returncode == 0, board.stderr
    assert f"game {game_id}" in board.stdout
    assert final.view.rendered.strip().splitlines()[0].strip() in board.stdout
    assert "game over — 1. " in board.stdout
    missing = cli(platform, "game", "show", "g" + "0" * 32)
    assert missing.returncode == 2 and "NOT_FOUND" in missing.stderr

    # ledger balances: what the ledger says, to the unit; the book sums to zero.
    book = asyncio.run(settled_balances(platform, game_id))
    money = ok_json(cli(platform, "ledger", "balances", "--game", game_id, "--json"))
    assert money["book"] == game_id and money["tree_size"] >= book.tree_size > 0
    assert {b["account"]: b["amount"] for b in money["balances"]} == {
        b.account: b.amount for b in book.balances
    }
    assert money["total"] == sum(b.amount for b in book.balances) == 0
    assert {"seat:0", "seat:1"} <= {b["account"] for b in money["balances"]}
    table = cli(platform, "ledger", "balances", "--game", game_id)
    assert table.returncode == 0, table.stderr
    seat0 = next(b for b in book.balances if b.account == "seat:0")
    assert any(
        "seat:0" in line and f"{seat0.amount:,}" in line for line in table.stdout.splitlines()
    )
    assert "total 0 over" in table.stdout


def test_games_hide_player_ids_from_anyone_but_an_operator(platform: Platform) -> None:
    tag = uuid.uuid4().hex[:8]
    players = [f"cli-{tag}-cat", f"cli-{tag}-dan"]
    game_id = asyncio.run(play_one(platform, players)).game_id

    # No token: the game is listed, its players are not.
    anyone = ok_json(cli(platform, "games", "--anonymous", "--status", "finished", "--json"))
    assert game_id in {g["game_id"] for g in anyone["games"]}
    assert all(g["player_ids"] == [] for g in anyone["games"])
    plain = cli(platform, "games", "--anonymous", "--status", "finished")
    assert game_id in plain.stdout and players[0] not in plain.stdout
    assert "player ids are shown to operators only" in plain.stdout

    # A player sees their own games (by naming themselves), still without the names.
    cat = mint(players[0], ("player",))
    own = ok_json(cli(platform, "games", "--player", players[0], "--json", token=cat))
    assert [g["game_id"] for g in own["games"]] == [game_id]
    assert own["games"][0]["player_ids"] == []

    # Another player's games: refused, exit 2 ("cannot"), the service's reason shown.
    eve = mint(f"cli-{tag}-eve", ("player",))
    spying = cli(platform, "games", "--player", players[0], "--json", token=eve)
    assert spying.returncode == 2 and "PERMISSION_DENIED" in spying.stderr
    assert spying.stdout == ""  # no half a document for a script to misread
    anonymous = cli(platform, "games", "--anonymous", "--player", players[0])
    assert anonymous.returncode == 2 and "PERMISSION_DENIED" in anonymous.stderr
    # A forged token is no operator's.
    forged = cli(platform, "games", "--player", players[0], token=OPERATOR[:-4] + "AAAA")
    assert forged.returncode == 2 and players[0] not in forged.stdout


def test_tickets_show_each_identity_only_its_own(platform: Platform) -> None:
    tag = uuid.uuid4().hex[:8]
    alice, bob = f"cli-{tag}-alice", f"cli-{tag}-bob"
    alice_token, bob_token = mint(alice, ("player",)), mint(bob, ("player",))

    async def queue() -> str:
        async with MatchmakingClient(platform.address("matchmaking"), token=alice_token) as mm:
            # A table of five nobody else joins, no bots: the ticket stays waiting.
            ticket = await mm.create_ticket("las_vegas", 5, 5)
            return ticket.ticket_id

    async def cancel(ticket_id: str) -> None:
        async with MatchmakingClient(platform.address("matchmaking"), token=alice_token) as mm:
            await mm.cancel_ticket(ticket_id)

    ticket_id = asyncio.run(queue())
    try:
        mine = ok_json(cli(platform, "tickets", "--json", token=alice_token))
        assert [t["ticket_id"] for t in mine["tickets"]] == [ticket_id]
        (t,) = mine["tickets"]
        assert (t["player_id"], t["game"], t["status"], t["min_seats"], t["max_seats"]) == (
            alice, "las_vegas", "waiting", 5, 5,
        )  # fmt: skip
        assert t["seat"] is None and t["game_id"] == ""
        assert "player_token" not in json.dumps(mine)
        human = cli(platform, "tickets", token=alice_token)
        assert human.returncode == 0 and ticket_id in human.stdout and "waiting" in human.stdout

        # Bob sees none of Alice's; naming her is refused; no token is refused.
        assert ok_json(cli(platform, "tickets", "--json", token=bob_token))["tickets"] == []
        nosy = cli(platform, "tickets", "--player", alice, "--json", token=bob_token)
        assert nosy.returncode == 2 and "PERMISSION_DENIED" in nosy.stderr
        assert ticket_id not in nosy.stdout + nosy.stderr
        nobody = cli(platform, "tickets", "--anonymous")
        assert nobody.returncode == 2 and "UNAUTHENTICATED" in nobody.stderr
        assert "pass --token (e.g. $(boulevard login NAME))" in nobody.stderr  # what to do
        assert "pass --token" not in nosy.stderr  # a refusal is not fixed by a token

        # The operator sees hers among everyone's, or hers alone.
        hers = ok_json(cli(platform, "tickets", "--player", alice, "--json", token=OPERATOR))
        assert [t["ticket_id"] for t in hers["tickets"]] == [ticket_id]
        waiting = ok_json(cli(platform, "tickets", "--status", "waiting", "--json", token=OPERATOR))
        assert ticket_id in {t["ticket_id"] for t in waiting["tickets"]}
    finally:
        asyncio.run(cancel(ticket_id))
    cancelled = ok_json(
        cli(platform, "tickets", "--json", "--status", "cancelled", token=alice_token)
    )
    assert [t["ticket_id"] for t in cancelled["tickets"]] == [ticket_id]


def test_the_reads_find_services_by_settings_and_say_when_they_cannot_reach_them(
    platform: Platform,
) -> None:
    from boulevard.messaging.server import free_port

    env_port = {**platform.env, "BOULEVARD_LEDGER_PORT": str(free_port())}
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "ledger", "balances", "--timeout", "2"],
        env=env_port, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "UNAVAILABLE" in done.stderr, done.stderr
    assert f"127.0.0.1:{env_port['BOULEVARD_LEDGER_PORT']}" in done.stderr
