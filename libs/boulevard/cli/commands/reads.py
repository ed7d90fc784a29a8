"""The reads: games, one game, tickets, a ledger book (the work: `boulevard.cli.reads`).
A failed call is "cannot" (exit 2) with the service's own status."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import grpc
import typer

from boulevard.cli import output
from boulevard.cli.commands.options import (
    DATA_DIR,
    HOST_PORT,
    EngineOption,
    JsonOption,
    TimeoutOption,
    examples,
    game_names,
)
from boulevard.cli.exits import ExitCode
from boulevard.games import REGISTRY

commands = typer.Typer()
game_app = typer.Typer(help="One game.", no_args_is_help=True, rich_markup_mode="rich")
ledger_app = typer.Typer(
    help="The money ledger's reads.", no_args_is_help=True, rich_markup_mode="rich"
)


def _known_game_or_any(name: str) -> str:
    """A `--game` filter: empty (any game) or a registry name. A game id or a typo would
    otherwise list nothing and exit 0, as if there were no such games."""
    if name and name not in REGISTRY:
        raise typer.BadParameter(
            f"unknown game {name!r}; choose from {', '.join(sorted(REGISTRY))} "
            "(one game by its id: boulevard game show <game_id>)"
        )
    return name


# `--game` on the list commands: a kind of game (any when empty), completed and checked.
GameKindFilter = Annotated[
    str,
    typer.Option(
        "--game",
        help="only games of this kind: " + ", ".join(sorted(REGISTRY)),
        autocompletion=game_names,
        callback=_known_game_or_any,
    ),
]


TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="BOULEVARD_TOKEN",
        show_envvar=True,
        help="the bearer token to call with (default: next to a local `boulevard up`, an "
        "operator token its issuer makes; else none)",
    ),
]
AnonymousOption = Annotated[
    bool, typer.Option("--anonymous", help="call with no token (what anyone may see)")
]
DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="the data dir of `boulevard up` (its issuer)" + DATA_DIR),
]


def _address(given: str | None, service: str) -> str:
    from boulevard.platform.settings import Settings

    if given:
        return given
    settings = Settings()
    return f"{settings.grpc_host}:{settings.port_of(service)}"


def _read(what: str, address: str, call: Callable[[], Any]) -> Any:
    """Run a read; a failed call is "cannot" (exit 2) with the service's own status."""
    try:
        return asyncio.run(call())
    except grpc.aio.AioRpcError as err:
        hint = output.hint(err.code().name)
        if err.code() == grpc.StatusCode.UNAUTHENTICATED:  # no token found, or a bad one
            hint = (
                "; pass --token (e.g. $(boulevard login NAME)), or run in the folder where "
                "`boulevard up` runs (or give --data-dir) to call as its operator"
            )
        output.console(stderr=True).print(
            f"cannot read {what} at {address}: {err.code().name}: {err.details()}{hint}",
            markup=False,
        )
        raise typer.Exit(ExitCode.CANNOT) from None


def _list(
    what: str,
    address: str,
    fetch: Callable[[], Any],
    document_of: Callable[[Any, bool], dict[str, Any]],
    show: Callable[[dict[str, Any], Any], None],
    caller: Any,
    as_json: bool,
) -> None:
    """A list read: what `fetch` found (and whether the service cut it short) as its JSON
    document, printed (--json) or shown as `caller` may see it."""
    found, truncated = _read(what, address, fetch)
    document = document_of(found, truncated)
    if as_json:
        output.print_json(document)
    else:
        show(document, caller)


def _status_value(name: str, enum: Any, prefix: str) -> int:
    if not name:
        return 0
    try:
        value: int = enum.Value(prefix + name.upper())
    except ValueError:
        choices = [n.removeprefix(prefix).lower() for n in enum.keys()][1:]  # noqa: SIM118 - an enum wrapper, not a dict
        raise typer.BadParameter(
            f"choose from {', '.join(choices)}", param_hint="--status"
        ) from None
    return value


@commands.command(
    epilog=examples(
        "boulevard games",
        "boulevard games --status finished --game las_vegas --json | jq '.games[].game_id'",
        "boulevard games --token $(boulevard login alice) --player alice",
    )
)
def games(
    status: Annotated[str, typer.Option("--status", help="active or finished (default: any)")] = "",
    game: GameKindFilter = "",
    player: Annotated[
        str,
        typer.Option("--player", help="only games this player sits in (operators, or yourself)"),
    ] = "",
    limit: Annotated[int, typer.Option("--limit", help="show at most this many (0: all)")] = 0,
    mine: Annotated[
        bool,
        typer.Option(
            "--mine",
            help="your running games (the player your --token names, or --player with a "
            "local issuer), your turn first, with your time left",
        ),
    ] = False,
    engine: EngineOption = None,
    token: TokenOption = None,
    anonymous: AnonymousOption = False,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """List the games on the platform (ListGames).

    Player ids are shown to operators only. Exit 0 listed, 2 cannot reach the engine or
    refused (e.g. --player naming someone else without an operator token)."""
    from boulevard.api.v1 import engine_pb2
    from boulevard.cli import reads
    from boulevard.platform.settings import Settings

    wanted = _status_value(status, engine_pb2.GameStatus, "GAME_STATUS_")
    address = _address(engine, "engine")
    if mine:
        me, caller = reads.resolve_player(token, player, data_dir, Settings())
        mine_found = _read(
            "your games",
            address,
            lambda: reads.fetch_my_games(address, caller, me, timeout=timeout),
        )
        if as_json:
            output.print_json({"player_id": me, "games": mine_found})
        else:
            reads.show_my_games(mine_found, me)
        return
    caller = reads.resolve_caller(token, anonymous, data_dir, Settings())
    _list(
        "the games",
        address,
        lambda: reads.fetch_games(
            address,
            caller,
            status=wanted,
            game=game,
            player_id=player,
            limit=limit,
            timeout=timeout,
        ),
        reads.games_json,
        reads.show_games,
        caller,
        as_json,
    )


@game_app.command(
    "show",
    epilog=examples("boulevard game show <game_id>", "boulevard game show <game_id> --json"),
)
def game_show(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game")],
    engine: EngineOption = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """Show one game as a spectator sees it now.

    The board (drawn as `boulevard watch` draws it), who is to act, and the ranking once
    it is over. Public reads only, no token. Exit 2 unknown game or cannot reach."""
    from boulevard.cli import reads

    address = _address(engine, "engine")
    shown = _read(f"game {game_id}", address, lambda: reads.fetch_game(address, game_id, timeout))
    if as_json:
        output.print_json(reads.game_json(shown))
    else:
        reads.show_game(shown)


@commands.command(
    epilog=examples(
        "boulevard tickets",
        "boulevard tickets --token $(boulevard login alice)",
        "boulevard tickets --status waiting --json",
    )
)
def tickets(
    status: Annotated[
        str,
        typer.Option("--status", help="waiting, matched, assigned, cancelled or expired"),
    ] = "",
    game: GameKindFilter = "",
    player: Annotated[
        str, typer.Option("--player", help="operators: only this player's tickets")
    ] = "",
    limit: Annotated[int, typer.Option("--limit", help="show at most this many (0: all)")] = 0,
    matchmaking: Annotated[
        str | None, typer.Option("--matchmaking", metavar=HOST_PORT, help="matchmaking's address")
    ] = None,
    token: TokenOption = None,
    anonymous: AnonymousOption = False,
    data_dir: DataDirOption = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """List matchmaking tickets (ListTickets), newest first.

    A player sees their own; an operator everyone's. Needs a token: exit 2 without one."""
    from boulevard.api.v1 import matchmaking_pb2
    from boulevard.cli import reads
    from boulevard.platform.settings import Settings

    wanted = _status_value(status, matchmaking_pb2.TicketStatus, "TICKET_STATUS_")
    caller = reads.resolve_caller(token, anonymous, data_dir, Settings())
    address = _address(matchmaking, "matchmaking")
    _list(
        "the tickets",
        address,
        lambda: reads.fetch_tickets(
            address,
            caller,
            player_id=player,
            game=game,
            status=wanted,
            limit=limit,
            timeout=timeout,
        ),
        reads.tickets_json,
        reads.show_tickets,
        caller,
        as_json,
    )


@ledger_app.command(
    "balances",
    epilog=examples(
        "boulevard ledger balances",
        "boulevard ledger balances --game <game_id> --json",
    ),
)
def ledger_balances(
    game: Annotated[str, typer.Option("--game", help="a game's book (its game id)")] = "",
    book: Annotated[str, typer.Option("--book", help="any book by name (default: platform)")] = "",
    account: Annotated[str, typer.Option("--account", help="only this account")] = "",
    ledger: Annotated[
        str | None, typer.Option("--ledger", metavar=HOST_PORT, help="the ledger's address")
    ] = None,
    as_json: JsonOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """Show the balances of one ledger book (GetBalances).

    A game's accounts (--game), or the platform's. A book's balances sum to zero: every
    entry is balanced."""
    from boulevard.cli import reads

    if game and book:
        raise typer.BadParameter("give --game or --book, not both", param_hint="--book")
    name = game or book or "platform"
    address = _address(ledger, "ledger")
    reply = _read(
        f"book {name}", address, lambda: reads.fetch_balances(address, name, account, timeout)
    )
    document = reads.balances_json(name, reply)
    if as_json:
        output.print_json(document)
    else:
        reads.show_balances(document)
