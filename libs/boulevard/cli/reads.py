"""The read commands: `boulevard games`, `game show`, `tickets` and `ledger balances`.

Each fetches through the public gRPC API (the services found as every command finds them:
Settings, i.e. BOULEVARD_GRPC_HOST and BOULEVARD_*_PORT, and TLS through
BOULEVARD_TLS_CA_FILE or `--tls-ca`), builds one JSON document whose keys docs/cli.md lists
(`--json` prints it as is), and shows people the same document as a table. The identity a
call carries is whatever the caller chose (`Caller`): the services decide what it may see
(ListGames shows player ids to operators only; ListTickets shows a player their own).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boulevard.api.v1 import (
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    ledger_pb2_grpc,
    matchmaking_pb2_grpc,
)
from boulevard.api.v1 import matchmaking_pb2 as mm_pb2
from boulevard.cli import output
from boulevard.client.table import Table
from boulevard.platform import tls
from boulevard.platform.identity import OPERATOR, bearer
from boulevard.platform.replicas import engine_channel
from boulevard.platform.settings import Settings

CLI_OPERATOR = "cli-operator"  # the subject of the operator token the local issuer makes
CLI_TOKEN_TTL = 300.0


@dataclass(frozen=True)
class Caller:
    """The bearer token a read sends ('' for none) and where it came from, for messages."""

    token: str = ""
    source: str = "no token"

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return bearer(self.token) if self.token else ()


def resolve_caller(
    token: str | None, anonymous: bool, data_dir: Path | None, settings: Settings
) -> Caller:
    """`--token` (or BOULEVARD_TOKEN) as given; `--anonymous`: none; else, next to a local
    `boulevard up`, an operator token its issuer makes (as `up`'s demo and `play` use it),
    and none where there is no local issuer."""
    from boulevard.cli.login import issuer_folder, local_issuer

    if anonymous:
        return Caller()
    if token:
        return Caller(token, "--token")
    folder = data_dir or settings.data_dir
    if not (issuer_folder(folder) / "jwks.json").exists():
        return Caller()
    minted = local_issuer(settings, folder).mint(CLI_OPERATOR, (OPERATOR,), CLI_TOKEN_TTL)
    return Caller(minted, f"operator token of the local issuer in {folder}")


def resolve_player(
    token: str | None, player: str, data_dir: Path | None, settings: Settings
) -> tuple[str, Caller]:
    """Who "mine" is, and the token to ask as: the subject of `--token` (or
    BOULEVARD_TOKEN), else, next to a local `boulevard up`, a player token its issuer makes
    for `--player` (default: your login name)."""
    import getpass

    from boulevard.cli.login import issuer_folder, local_issuer
    from boulevard.cli.play import token_subject

    if token:
        return token_subject(token) or player, Caller(token, "--token")
    folder = data_dir or settings.data_dir
    me = player or getpass.getuser()
    if not (issuer_folder(folder) / "jwks.json").exists():
        return me, Caller()
    minted = local_issuer(settings, folder).mint(me, ("player",), CLI_TOKEN_TTL)
    return me, Caller(minted, f"player token of the local issuer in {folder}")


# -- names on the wire -> names in JSON -------------------------------------------------------


def _enum_name(value_name: str, prefix: str) -> str:
    return value_name.removeprefix(prefix).lower()


def game_status(status: int) -> str:
    """'active', 'finished' or 'unspecified'."""
    return _enum_name(
        engine_pb2.GameStatus.Name(engine_pb2.GameStatus.ValueType(status)), "GAME_STATUS_"
    )


def ticket_status(status: int) -> str:
    return _enum_name(
        mm_pb2.TicketStatus.Name(mm_pb2.TicketStatus.ValueType(status)), "TICKET_STATUS_"
    )


def account_kind(kind: int) -> str:
    return _enum_name(
        ledger_pb2.AccountKind.Name(ledger_pb2.AccountKind.ValueType(kind)), "ACCOUNT_KIND_"
    )


# -- the JSON documents (their keys are documented in docs/cli.md) ----------------------------


def game_summary_json(g: engine_pb2.GameSummary) -> dict[str, Any]:
    return {
        "game_id": g.game_id,
        "game": g.game,
        "status": game_status(g.status),
        "version": g.version,
        "player_ids": list(g.player_ids),  # [] unless the caller is an operator
    }


def games_json(games: Sequence[engine_pb2.GameSummary], truncated: bool) -> dict[str, Any]:
    return {
        "games": [game_summary_json(g) for g in games],
        "count": len(games),
        "truncated": truncated,
    }


def ticket_json(t: mm_pb2.Ticket) -> dict[str, Any]:
    return {
        "ticket_id": t.ticket_id,
        "player_id": t.player_id,
        "game": t.game,
        "status": ticket_status(t.status),
        "min_seats": t.min_seats,
        "max_seats": t.max_seats,
        "game_id": t.game_id,
        "seat": t.seat if t.status == mm_pb2.TICKET_STATUS_ASSIGNED else None,
        "created_unix_ms": t.created_unix_ms,
        "updated_unix_ms": t.updated_unix_ms,
        "expires_unix_ms": t.expires_unix_ms,
        "status_reason": t.status_reason,
    }


def tickets_json(tickets: Sequence[mm_pb2.Ticket], truncated: bool) -> dict[str, Any]:
    return {
        "tickets": [ticket_json(t) for t in tickets],
        "count": len(tickets),
        "truncated": truncated,
    }


def balances_json(book: str, reply: ledger_pb2.GetBalancesResponse) -> dict[str, Any]:
    balances = [
        {"account": b.account, "kind": account_kind(b.kind), "amount": b.amount}
        for b in reply.balances
    ]
    return {
        "book": book,
        "tree_size": reply.tree_size,
        "balances": balances,
        "total": sum(b.amount for b in reply.balances),
    }


@dataclass
class GameShown:
    """What `game show` learned: the engine's answer and the names and result in its log."""

    game: engine_pb2.GetGameResponse
    player_ids: list[str]
    finished: dict[str, Any] | None


def game_json(shown: GameShown) -> dict[str, Any]:
    g = shown.game
    finished = shown.finished or {}
    return {
        "game_id": g.game_id,
        "game": g.game,
        "status": game_status(g.status),
        "version": g.version,
        "to_act": list(g.to_act),
        "player_ids": shown.player_ids,
        "board": g.view.rendered,
        "ranking": [list(group) for group in finished.get("ranking", [])] or None,
        "scores": list(finished.get("scores", [])) or None,
    }


# -- fetching ---------------------------------------------------------------------------------


async def paged(
    fetch: Callable[[str], Awaitable[Any]], items: str, limit: int = 0
) -> tuple[list[Any], bool]:
    """Everything a paged List RPC returns (`fetch(page_token)` gives one page, `items` names
    its repeated field), at most `limit` (0: all); and whether more were left out."""
    out: list[Any] = []
    token = ""
    while True:
        page = await fetch(token)
        out.extend(getattr(page, items))
        token = page.next_page_token
        if limit and len(out) >= limit:
            return out[:limit], len(out) > limit or bool(token)
        if not token:
            return out, False


async def fetch_games(
    address: str,
    caller: Caller,
    *,
    status: int = engine_pb2.GAME_STATUS_UNSPECIFIED,
    game: str = "",
    player_id: str = "",
    limit: int = 0,
    timeout: float = 10.0,
) -> tuple[list[engine_pb2.GameSummary], bool]:
    """Every game ListGames shows this caller (at most `limit`, 0: all); and whether more
    were left out."""
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        return await paged(
            lambda token: stub.ListGames(
                engine_pb2.ListGamesRequest(
                    status=engine_pb2.GameStatus.ValueType(status),
                    game=game,
                    player_id=player_id,
                    page_size=500,
                    page_token=token,
                ),
                metadata=caller.metadata,
                timeout=timeout,
            ),
            "games",
            limit,
        )


async def fetch_tickets(
    address: str,
    caller: Caller,
    *,
    player_id: str = "",
    game: str = "",
    status: int = mm_pb2.TICKET_STATUS_UNSPECIFIED,
    limit: int = 0,
    timeout: float = 10.0,
) -> tuple[list[mm_pb2.Ticket], bool]:
    async with tls.channel(address) as channel:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        return await paged(
            lambda token: stub.ListTickets(
                mm_pb2.ListTicketsRequest(
                    player_id=player_id,
                    game=game,
                    status=mm_pb2.TicketStatus.ValueType(status),
                    page_size=1000,
                    page_token=token,
                ),
                metadata=caller.metadata,
                timeout=timeout,
            ),
            "tickets",
            limit,
        )


async def fetch_balances(
    address: str, book: str, account: str = "", timeout: float = 10.0
) -> ledger_pb2.GetBalancesResponse:
    async with tls.channel(address) as channel:
        stub = ledger_pb2_grpc.LedgerServiceStub(channel)
        reply: ledger_pb2.GetBalancesResponse = await stub.GetBalances(
            ledger_pb2.GetBalancesRequest(book=book, account=account), timeout=timeout
        )
        return reply


async def fetch_game(address: str, game_id: str, timeout: float = 10.0) -> GameShown:
    """The spectator's view (GetGame) and, from the public log, the seats' player ids
    (GameCreated) and, once over, the result (GameFinished)."""
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id), timeout=timeout)
        player_ids: list[str] = []
        finished: dict[str, Any] | None = None
        first = stub.WatchGame(engine_pb2.WatchGameRequest(game_id=game_id), timeout=timeout)
        async for update in first:
            if update.event.type == "GameCreated":
                seats = json.loads(update.event.payload).get("seats", [])
                player_ids = [str(s.get("player_id", "")) for s in seats]
            break
        first.cancel()
        if got.status == engine_pb2.GAME_STATUS_FINISHED and got.version:
            last = stub.WatchGame(
                engine_pb2.WatchGameRequest(game_id=game_id, from_version=got.version),
                timeout=timeout,
            )
            async for update in last:
                if update.event.type == "GameFinished":
                    finished = json.loads(update.event.payload)
                break
            last.cancel()
        return GameShown(got, player_ids, finished)


# -- for people -------------------------------------------------------------------------------


def _many(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def show_games(document: dict[str, Any], caller: Caller) -> None:
    out = output.console()
    rows = [
        (g["game_id"], g["game"], g["status"], g["version"], ", ".join(g["player_ids"]) or "—")
        for g in document["games"]
    ]
    output.table(
        "", ("game id", "game", "status", "version", "players"), rows, out=out, right=("version",)
    )
    more = " (more left out: raise --limit)" if document["truncated"] else ""
    out.print(f"{_many(document['count'], 'game')}{more}; as: {caller.source}")
    if document["games"] and not any(g["player_ids"] for g in document["games"]):
        out.print("player ids are shown to operators only")


async def fetch_my_games(
    address: str, caller: Caller, player_id: str, *, timeout: float = 10.0
) -> list[dict[str, Any]]:
    """The running games `player_id` (the caller's token's subject) sits in, each with
    their seat, whether it is their turn, and the seats' clocks: what `games --mine` shows."""
    found, _ = await fetch_games(
        address, caller, status=engine_pb2.GAME_STATUS_ACTIVE, player_id=player_id, timeout=timeout
    )
    out = []
    async with engine_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        for summary in found:
            seat = await stub.RenewPlayerToken(
                engine_pb2.RenewPlayerTokenRequest(game_id=summary.game_id),
                metadata=caller.metadata,
                timeout=timeout,
            )
            game = await stub.GetGame(
                engine_pb2.GetGameRequest(game_id=summary.game_id), timeout=timeout
            )
            clock = next((c for c in game.clocks if c.seat == seat.seat), None)
            out.append(
                {
                    "game_id": summary.game_id,
                    "game": summary.game,
                    "seat": seat.seat,
                    "your_turn": seat.seat in game.to_act,
                    "to_act": list(game.to_act),
                    "version": game.version,
                    "remaining_ms": clock.remaining_ms if clock else None,
                    "deadline_unix_ms": clock.deadline_unix_ms if clock and clock.running else None,
                    "absent": bool(clock and clock.absent),
                    "clocks_unix_ms": game.clocks_unix_ms or None,
                }
            )
    out.sort(key=lambda g: (not g["your_turn"], g["deadline_unix_ms"] or 0, g["game_id"]))
    return out


def show_my_games(games: Sequence[dict[str, Any]], player_id: str) -> None:
    """Your turn first, soonest deadline first: "your turn, 3 h left"."""
    from boulevard.contract.clocks import clock_words

    out = output.console()
    rows = []
    for g in games:
        if g["absent"]:
            state = "timed out: the bot plays it (boulevard play --resume)"
        elif g["your_turn"]:
            left = g["remaining_ms"]
            state = "your turn" + (f", {clock_words(left)} left" if left is not None else "")
        else:
            state = "waiting for seat(s) " + ", ".join(str(s) for s in g["to_act"])
        rows.append((g["game_id"], g["game"], g["seat"], state))
    output.table("", ("game id", "game", "seat", "now"), rows, out=out)
    turns = sum(1 for g in games if g["your_turn"] and not g["absent"])
    out.print(f"{_many(len(games), 'running game')} of {player_id}; your turn in {turns}")


def show_tickets(document: dict[str, Any], caller: Caller) -> None:
    out = output.console()
    rows = [
        (
            t["ticket_id"],
            t["player_id"],
            t["game"],
            t["status"],
            f"{t['min_seats']}-{t['max_seats']}",
            t["game_id"] or "—",
            "—" if t["seat"] is None else t["seat"],
        )
        for t in document["tickets"]
    ]
    columns = ("ticket id", "player", "game", "status", "seats", "game id", "seat")
    output.table("", columns, rows, out=out)
    more = " (more left out: raise --limit)" if document["truncated"] else ""
    out.print(f"{_many(document['count'], 'ticket')}{more}; as: {caller.source}")


def show_balances(document: dict[str, Any]) -> None:
    out = output.console()
    rows = [(b["account"], b["kind"], f"{b['amount']:,}") for b in document["balances"]]
    title = f"book {document['book']} (after the ledger's first {document['tree_size']:,} entries)"
    output.table(title, ("account", "kind", "amount"), rows, out=out, right=("amount",))
    out.print(f"total {document['total']:,} over {_many(len(rows), 'account')}")
    if not rows:  # a mistyped game id is a book nobody wrote to, not an error of the ledger
        out.print(
            f"no ledger entry names book {document['book']!r} yet (a game's book is its game "
            "id: boulevard games lists them)"
        )


def show_game(shown: GameShown) -> None:
    """The board as `boulevard watch` draws it (`boulevard.client.table.Table`), then the
    facts below it."""
    g = shown.game
    frames: list[str] = []
    table = Table(g.game, out=frames.append, terminal=False)
    table.names = [f"{pid} (seat {i})" for i, pid in enumerate(shown.player_ids)]
    table.finished = shown.finished
    table.frame(engine_pb2.WatchGameResponse(view=g.view, to_act=g.to_act))
    out = output.console()
    out.print(f"game {g.game_id} — {g.game}, {game_status(g.status)}, version {g.version}")
    for frame in frames:
        out.print(frame, markup=False)
    if shown.finished is not None:
        out.print(f"game over — {table.ranking()}", markup=False)
