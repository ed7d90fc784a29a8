"""The `boulevard` command: every sub-command, its options and its help, in one place.

Built on typer (options typed from the signatures, shell completion with
`--install-completion`/`--show-completion`) and rich (coloured help, tables, progress
bars; plain text off a terminal and with NO_COLOR). The commands' work lives in their own
modules (`up`, `audit_dice`, `reads`, …); this module only names the options and passes
them on. Exit codes: `boulevard.cli.exits` (0 ok, 1 failed, 2 cannot, 130 interrupted),
documented with every command in docs/cli.md.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import grpc
import typer

from boulevard.cli import output
from boulevard.cli.exits import ExitCode
from boulevard.games import REGISTRY

HOST_PORT = "HOST:PORT"

app = typer.Typer(
    name="boulevard",
    help="Boulevard: run, play and audit Vegas board games on NATS and gRPC.\n\n"
    "Exit codes: 0 ok, 1 the answer is no (a verification failed), 2 there was no answer "
    "(cannot reach, unknown id, refused, bad usage), 130 interrupted. See docs/cli.md.",
    epilog="[bold]Examples[/bold]\n\n"
    "  boulevard up                      start everything and watch a demo game\n\n"
    "  boulevard games --status finished the games played so far\n\n"
    "  boulevard audit all --html r.html audit every game and the ledger",
    rich_markup_mode="rich",
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # plain tracebacks, and never a token shown as a local
    context_settings={"help_option_names": ["-h", "--help"]},
)
audit_app = typer.Typer(
    help="Verify dice, games and money without trusting the operator.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
issuer_app = typer.Typer(
    help="Manage the local token issuer.", no_args_is_help=True, rich_markup_mode="rich"
)
game_app = typer.Typer(help="One game.", no_args_is_help=True, rich_markup_mode="rich")
ledger_app = typer.Typer(
    help="The money ledger's reads.", no_args_is_help=True, rich_markup_mode="rich"
)
app.add_typer(audit_app, name="audit")
app.add_typer(issuer_app, name="issuer")
app.add_typer(game_app, name="game")
app.add_typer(ledger_app, name="ledger")


# Relative to where the command runs: `boulevard login` in another folder finds no issuer.
_DATA_DIR = " (default: BOULEVARD_DATA_DIR, else .data in the current folder)"


def _examples(*lines: str) -> str:
    """An epilog: the command's examples, one per paragraph (rich keeps them apart)."""
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  {line}" for line in lines)


def _run(run: Callable[[argparse.Namespace], int], **options: Any) -> NoReturn:
    """Hand the options to a command's `run(args)` and exit with its code."""
    raise typer.Exit(run(argparse.Namespace(**options)))


def _game_names(incomplete: str) -> list[str]:
    return [name for name in sorted(REGISTRY) if name.startswith(incomplete)]


def _known_game(name: str) -> str:
    if name not in REGISTRY:
        raise typer.BadParameter(
            f"unknown game {name!r}; choose from {', '.join(sorted(REGISTRY))}"
        )
    return name


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
        autocompletion=_game_names,
        callback=_known_game_or_any,
    ),
]


@app.callback()
def _root(
    tls_ca: Annotated[
        Path | None,
        typer.Option(
            "--tls-ca",
            metavar="FILE",
            help="verify the services' TLS certificates with this CA (default: "
            "BOULEVARD_TLS_CA_FILE; plaintext gRPC when neither is set)",
        ),
    ] = None,
) -> None:
    if tls_ca:
        from boulevard.platform import tls

        # Read by every gRPC channel the commands open (boulevard.platform.tls.channel).
        os.environ[tls.CA_ENV] = str(tls_ca)


# -- running the platform -------------------------------------------------------------------


@app.command(
    epilog=_examples(
        "boulevard up", "boulevard up --no-demo --tls", "boulevard up --exit-after-demo --speed 0"
    )
)
def up(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="the platform's folder: NATS's store, keys, the token issuer, logs" + _DATA_DIR,
        ),
    ] = None,
    services: Annotated[
        str, typer.Option("--services", help="comma-separated services to start")
    ] = "matchmaking,engine,dice,ledger",
    no_demo: Annotated[bool, typer.Option("--no-demo", help="do not play the demo game")] = False,
    demo: Annotated[
        str,
        typer.Option(
            "--demo", metavar="GAME", help="the game the demo plays", autocompletion=_game_names
        ),
    ] = "lords_of_vegas",
    speed: Annotated[
        float,
        typer.Option("--speed", help="demo turns shown per second on a terminal (0: no pause)"),
    ] = 2.0,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="stream the services' logs here, not to files")
    ] = False,
    exit_after_demo: Annotated[
        bool, typer.Option("--exit-after-demo", help="stop everything once the demo ends")
    ] = False,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds to wait for SERVING")] = 60.0,
    use_tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="serve gRPC and NATS over TLS, with a local CA and certificates made in "
            "<data-dir>/tls (clients: --tls-ca <data-dir>/tls/ca.pem)",
        ),
    ] = False,
    cluster: Annotated[
        int,
        typer.Option(
            "--cluster",
            metavar="N",
            help="run N nats-servers as one JetStream cluster (streams at min(N, 3) replicas)",
        ),
    ] = 1,
) -> None:
    """Start NATS and the services, play a demo game and audit it.

    Waits until every service says SERVING (a progress bar on a terminal), prints where
    they listen, plays and audits a demo game; Ctrl-C stops everything. Exit 0 stopped on
    request, 1 could not start (or a demo audit failed), 2 bad arguments."""
    from boulevard.cli import up as up_command

    _run(
        up_command.run, data_dir=data_dir, services=services, no_demo=no_demo, demo=demo,
        speed=speed, verbose=verbose, exit_after_demo=exit_after_demo, timeout=timeout,
        tls=use_tls, cluster=cluster,
    )  # fmt: skip


@app.command(epilog=_examples("boulevard login alice", "boulevard login olga --role operator"))
def login(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="the player (or operator) id: the token's subject")
    ],
    role: Annotated[str, typer.Option("--role", help="player, operator or auditor")] = "player",
    ttl: Annotated[float, typer.Option("--ttl", help="seconds the token is valid")] = 3600.0,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + _DATA_DIR)
    ] = None,
) -> None:
    """Print a bearer token from the local issuer `boulevard up` made."""
    from boulevard.cli import login as login_command
    from boulevard.platform.identity import ROLES

    if role not in ROLES:
        raise typer.BadParameter(f"choose from {', '.join(sorted(ROLES))}", param_hint="--role")
    _run(login_command.login, name=name, role=role, ttl=ttl, data_dir=data_dir)


@issuer_app.command("rotate", epilog=_examples("boulevard issuer rotate"))
def issuer_rotate(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + _DATA_DIR)
    ] = None,
) -> None:
    """Add a new signing key to the local issuer.

    The JWKS keeps the previous one, so tokens handed out still work until they expire."""
    from boulevard.cli import login as login_command

    _run(login_command.rotate_key, data_dir=data_dir)


@app.command("nats-identities", epilog=_examples("boulevard nats-identities deploy/nats-ids"))
def nats_identities(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="where to keep the seeds (made, mode 0700)")
    ],
) -> None:
    """Make the NATS identities (nkeys) of a deployment and the secrets file to copy."""
    from boulevard.cli import nats_identities as command

    _run(command.run, dir=directory)


@app.command("tls-certs", epilog=_examples("boulevard tls-certs deploy/tls --host engine.example"))
def tls_certs(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="where to write the PEM files")],
    host: Annotated[
        list[str] | None,
        typer.Option(
            "--host",
            help="a name the certificate is for (repeat; default: nats, matchmaking, engine, "
            "dice, ledger)",
        ),
    ] = None,
    days: Annotated[int, typer.Option("--days", help="validity of the server certificate")] = 365,
) -> None:
    """Make a CA and a server certificate for TLS."""
    from boulevard.cli import tls_certs as command

    _run(command.run, dir=directory, host=host or [], days=days)


@app.command(epilog=_examples("boulevard backup GAMES games.bak"))
def backup(
    stream: Annotated[
        str,
        typer.Argument(
            metavar="STREAM", help="GAMES, DICE, LEDGER, MATCHMAKING, or a KV's KV_<bucket>"
        ),
    ],
    file: Annotated[Path, typer.Argument(metavar="FILE", help="the backup file to write")],
) -> None:
    """Write a JetStream stream to a file, online. Exit 1 if it failed."""
    from boulevard.cli import backup as command

    _run(command._run_backup, stream=stream, file=file)


@app.command(epilog=_examples("boulevard restore games.bak"))
def restore(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="a `boulevard backup` file")],
) -> None:
    """Create a stream from a `boulevard backup` file (never over an existing one)."""
    from boulevard.cli import backup as command

    _run(command._run_restore, file=file)


@app.command(
    epilog=_examples(
        "boulevard healthcheck 127.0.0.1:50052 boulevard.v1.EngineService",
        "boulevard healthcheck 127.0.0.1:50054 --json",
    )
)
def healthcheck(
    target: Annotated[str, typer.Argument(metavar=HOST_PORT, help="the gRPC server")],
    service: Annotated[
        str,
        typer.Argument(
            metavar="SERVICE",
            help='full proto service name, e.g. boulevard.v1.EngineService ("": the server)',
        ),
    ] = "",
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="give up after this long")
    ] = 3.0,
    alive: Annotated[
        bool,
        typer.Option(
            "--alive", help="liveness: NOT_SERVING counts too (the process answers; not ready)"
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Ask a gRPC server's standard health service whether it is SERVING.

    Exit 0 SERVING, 1 anything else, 2 bad arguments. Containers run
    `python -m boulevard.cli.healthcheck`, the same check without the rest of the CLI."""
    from boulevard.cli import healthcheck as command

    try:
        parsed = command.parse_target(target)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="HOST:PORT") from None
    if not timeout > 0:
        raise typer.BadParameter("must be more than 0", param_hint="--timeout")
    raise typer.Exit(command.report(parsed, service, timeout, None, as_json=as_json, alive=alive))


# -- playing and watching -------------------------------------------------------------------


@app.command(
    epilog=_examples(
        "boulevard play lords_of_vegas",
        "boulevard play las_vegas --seats 4 --bot-fill 0 --token $TOKEN",
    )
)
def play(
    game: Annotated[
        str,
        typer.Argument(
            metavar="GAME",
            help=f"the game to play: {', '.join(sorted(REGISTRY))} (not with --resume)",
            autocompletion=_game_names,
            callback=_known_game_or_any,
        ),
    ] = "",
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="your bearer token (default: BOULEVARD_PLAYER_TOKEN; else, next to a local "
            "`boulevard up`, one its issuer makes for --player)",
        ),
    ] = None,
    player: Annotated[
        str | None,
        typer.Option("--player", help="with a local issuer: your player id (default: your login)"),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + _DATA_DIR)
    ] = None,
    seats: Annotated[
        int,
        typer.Option(
            "--seats",
            help="table size (default: 3, or the nearest the game allows)",
            show_default=False,
        ),
    ] = 0,
    bot_fill: Annotated[
        int,
        typer.Option(
            "--bot-fill",
            metavar="SECONDS",
            help="bots take the seats nobody took after this long (0: wait for people)",
        ),
    ] = 2,
    matchmaking: Annotated[
        str | None, typer.Option("--matchmaking", metavar=HOST_PORT, help="matchmaking's address")
    ] = None,
    engine: Annotated[
        str | None, typer.Option("--engine", metavar=HOST_PORT, help="the engine's address")
    ] = None,
    dice: Annotated[
        str | None, typer.Option("--dice", metavar=HOST_PORT, help="the dice service's address")
    ] = None,
    clock: Annotated[
        str,
        typer.Option(
            "--clock",
            metavar="CONTROL",
            help="a time control: 10m+20s (real time: base + increment per move), 1d/move or "
            "1d/move+1h (turn-based: per move + reserve), none; tables match only equal ones",
        ),
    ] = "none",
    resume: Annotated[
        str,
        typer.Option(
            "--resume",
            metavar="GAME_ID",
            help="sit down again at a running game of yours (taking your seat back from the "
            "platform's bot if your time ran out in a turn-based game)",
        ),
    ] = "",
) -> None:
    """Sit down at a table and play a game in the terminal.

    Joins through matchmaking (bots fill the seats nobody takes). Exit 0 the game ended and
    its dice verified, 1 they did not, 2 cannot play, 130 quit."""
    from boulevard.cli import play as command

    _run(
        command.run, game=game, token=token, player=player, data_dir=data_dir, seats=seats,
        bot_fill=bot_fill, matchmaking=matchmaking, engine=engine, dice=dice, clock=clock,
        resume=resume,
    )  # fmt: skip


@app.command(epilog=_examples("boulevard watch <game_id>", "boulevard watch <game_id> --tui"))
def watch(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game to watch")],
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar=HOST_PORT,
            help="the engine's address (default: BOULEVARD_GRPC_HOST and BOULEVARD_ENGINE_PORT)",
        ),
    ] = None,
    speed: Annotated[
        float, typer.Option("--speed", help="turns shown per second on a terminal (0: no pause)")
    ] = 2.0,
    tui: Annotated[
        bool, typer.Option("--tui", help="the full-screen view `boulevard play` shows")
    ] = False,
    dice: Annotated[
        str | None,
        typer.Option(
            "--dice", metavar=HOST_PORT, help="with --tui: the dice service, to verify the dice"
        ),
    ] = None,
) -> None:
    """Follow a game as a spectator.

    The board after each turn, the moves in words, the dice. Exit 0 the game ended, 2
    cannot watch, 130 interrupted."""
    from boulevard.cli import watch as command

    _run(command.run, game_id=game_id, engine=engine, speed=speed, tui=tui, dice=dice)


# -- reads ----------------------------------------------------------------------------------

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
    typer.Option("--data-dir", help="the data dir of `boulevard up` (its issuer)" + _DATA_DIR),
]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON document (docs/cli.md)")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="seconds per call")]


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


@app.command(
    epilog=_examples(
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
    engine: Annotated[
        str | None, typer.Option("--engine", metavar=HOST_PORT, help="the engine's address")
    ] = None,
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
    found, truncated = _read(
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
    )
    document = reads.games_json(found, truncated)
    if as_json:
        output.print_json(document)
    else:
        reads.show_games(document, caller)


@game_app.command(
    "show",
    epilog=_examples("boulevard game show <game_id>", "boulevard game show <game_id> --json"),
)
def game_show(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game")],
    engine: Annotated[
        str | None, typer.Option("--engine", metavar=HOST_PORT, help="the engine's address")
    ] = None,
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


@app.command(
    epilog=_examples(
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
    found, truncated = _read(
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
    )
    document = reads.tickets_json(found, truncated)
    if as_json:
        output.print_json(document)
    else:
        reads.show_tickets(document, caller)


@ledger_app.command(
    "balances",
    epilog=_examples(
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


# -- audits ---------------------------------------------------------------------------------

EngineAddress = Annotated[
    str | None, typer.Option("--engine", metavar=HOST_PORT, help="the engine's address")
]
DiceAddress = Annotated[
    str | None, typer.Option("--dice", metavar=HOST_PORT, help="the dice service's address")
]
LedgerAddress = Annotated[
    str | None, typer.Option("--ledger", metavar=HOST_PORT, help="the ledger's address")
]
NoDice = Annotated[bool, typer.Option("--no-dice", help="do not compare with the dice records")]
NoLedger = Annotated[bool, typer.Option("--no-ledger", help="do not compare with the ledger")]
HtmlOption = Annotated[
    str | None,
    typer.Option(
        "--html",
        metavar="FILE",
        help="also write a report a person reads (one self-contained HTML file)",
    ),
]


@audit_app.command(
    "ledger",
    epilog=_examples(
        "boulevard audit ledger",
        "boulevard audit ledger --game <game_id> --quiet",
        "boulevard audit ledger --public-key <hex> --html ledger.html",
    ),
)
def audit_ledger(
    game: Annotated[str, typer.Option("--game", help="audit only this game's entries")] = "",
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            metavar=HOST_PORT,
            help="the ledger's address (default: BOULEVARD_GRPC_HOST and BOULEVARD_LEDGER_PORT)",
        ),
    ] = None,
    public_key: Annotated[
        str,
        typer.Option(
            "--public-key",
            help="the ledger's Ed25519 public key (hex) obtained out of band; default: trust "
            "the key the service publishes, and print it",
        ),
    ] = "",
    no_reconcile: Annotated[
        bool, typer.Option("--no-reconcile", help="skip replaying games against the ledger")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="print only the verdict")] = False,
    html: HtmlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Verify the money ledger without trusting the operator.

    Every entry balanced and chained, every signed head and proof, every game reconciled.
    Exit 0 pass, 1 failed, 2 cannot reach the ledger."""
    from boulevard.cli import audit_ledger as command

    _run(
        command.run, game=game, address=address, public_key=public_key,
        no_reconcile=no_reconcile, quiet=quiet, html=html, json=as_json,
    )  # fmt: skip


@audit_app.command(
    "dice",
    epilog=_examples(
        "boulevard audit dice <game_id>",
        "boulevard audit dice <game_id> --dice-key <hex> --json",
    ),
)
def audit_dice(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game to audit")],
    dice: Annotated[
        str | None,
        typer.Option(
            "--dice",
            metavar=HOST_PORT,
            help="the dice service's address (default: BOULEVARD_GRPC_HOST and "
            "BOULEVARD_DICE_PORT)",
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar=HOST_PORT,
            help="the engine's address, to check the game used exactly the recorded outcomes",
        ),
    ] = None,
    no_engine: Annotated[
        bool, typer.Option("--no-engine", help="check the dice records only, not their use")
    ] = False,
    dice_key: Annotated[
        str | None,
        typer.Option(
            "--dice-key",
            metavar="HEX",
            help="the dice service's Ed25519 public key as you pinned it (default: the key "
            "the service serves)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    html: HtmlOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per call")] = 10.0,
) -> None:
    """Re-derive every roll and shuffle of a finished game from its revealed seed.

    Exit 0 pass, 1 failed, 2 cannot audit (unreachable, unknown game, seed not revealed)."""
    from boulevard.cli import audit_dice as command

    _run(
        command.run, game_id=game_id, dice=dice, engine=engine, no_engine=no_engine,
        dice_key=dice_key, json=as_json, html=html, timeout=timeout,
    )  # fmt: skip


@audit_app.command(
    "game",
    epilog=_examples(
        "boulevard audit game <game_id>",
        "boulevard audit game <game_id> --receipts mine.jsonl --json",
    ),
)
def audit_game(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game to audit")],
    engine: EngineAddress = None,
    dice: DiceAddress = None,
    ledger: LedgerAddress = None,
    no_dice: NoDice = False,
    no_ledger: NoLedger = False,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per call")] = 30.0,
    receipts: Annotated[
        Path | None, typer.Option("--receipts", help="JSON lines of receipts to check")
    ] = None,
    engine_key: Annotated[
        str,
        typer.Option(
            "--engine-key",
            help="the engine's receipt key (hex) obtained out of band (default: GetEngineKey)",
        ),
    ] = "",
    evidence: Annotated[
        Path | None,
        typer.Option(
            "--evidence",
            metavar="FILE",
            help="a player's evidence file (receipts, dice and ledger heads kept in play)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    html: HtmlOption = None,
) -> None:
    """Re-run a game's rules over its signed, hash-chained log.

    Exit 0 pass, 1 a check failed, 2 cannot audit."""
    from boulevard.cli import audit_game as command

    _run(
        command.run_game, game_id=game_id, engine=engine, dice=dice, ledger=ledger,
        no_dice=no_dice, no_ledger=no_ledger, timeout=timeout, receipts=receipts,
        engine_key=engine_key, json=as_json, html=html, evidence=evidence,
    )  # fmt: skip


def _check_since(value: str | None) -> str | None:
    """Refuse a --since that is neither a span nor a date before anything runs (exit 2)."""
    if value is not None:
        from boulevard.cli.audit_game import since_unix_ms

        try:
            since_unix_ms(value, time.time())
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
    return value


@audit_app.command(
    "all",
    epilog=_examples(
        "boulevard audit all",
        "boulevard audit all --game-name las_vegas --limit 100 --html audit.html",
        "boulevard audit all --json | jq '.failed'",
        "boulevard audit all --since 24h --html today.html",
    ),
)
def audit_all(
    engine: EngineAddress = None,
    dice: DiceAddress = None,
    ledger: LedgerAddress = None,
    no_dice: NoDice = False,
    no_ledger: NoLedger = False,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per call")] = 30.0,
    limit: Annotated[int, typer.Option("--limit", help="audit at most this many games")] = 0,
    game_name: Annotated[
        str,
        typer.Option(
            "--game-name", help="only games of this registry name", autocompletion=_game_names
        ),
    ] = "",
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="only games created or ended since WHEN: a span back from now (24h, 7d, 90m) or "
            "an ISO date/time (2026-11-30, 2026-11-30T12:00:00Z; UTC when no zone)",
            callback=_check_since,
        ),
    ] = None,
    evidence: Annotated[
        Path | None,
        typer.Option(
            "--evidence",
            metavar="DIR",
            help="a folder of players' evidence files (*.json), each checked with its game",
        ),
    ] = None,
    html: HtmlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Audit every game, running ones to their last version (rules, dice), then the ledger.

    One line per game (a progress bar too on a terminal). Exit 0 all pass, 1 any failed, 2
    cannot audit."""
    from boulevard.cli import audit_game as command

    _run(
        command.run_all, engine=engine, dice=dice, ledger=ledger, no_dice=no_dice,
        no_ledger=no_ledger, timeout=timeout, limit=limit, game_name=game_name, html=html,
        json=as_json, since=since, evidence=evidence,
    )  # fmt: skip


@app.command("exit-codes")
def exit_codes(as_json: JsonOption = False) -> None:
    """The exit codes every command keeps to."""
    from boulevard.cli.exits import EXIT_CODES

    if as_json:
        output.print_json([{"code": int(c), "name": n, "meaning": m} for c, n, m in EXIT_CODES])
        return
    output.table("", ("code", "name", "meaning"), [(int(c), n, m) for c, n, m in EXIT_CODES])


def _unwrap(doc: str) -> str:
    """A docstring as help: paragraphs kept, the source's line breaks inside them removed
    (rich wraps the text to the terminal)."""
    return "\n\n".join(
        " ".join(line.strip() for line in paragraph.splitlines())
        for paragraph in inspect.cleandoc(doc).split("\n\n")
    )


for _typer in (app, audit_app, issuer_app, game_app, ledger_app):
    for _info in _typer.registered_commands:
        if _info.help is None and _info.callback is not None and _info.callback.__doc__:
            _info.help = _unwrap(_info.callback.__doc__)
