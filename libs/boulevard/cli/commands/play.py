"""Playing and watching: `boulevard play` and `boulevard watch` (the work:
`boulevard.cli.play`, `boulevard.cli.watch`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from boulevard.cli.commands.options import (
    DATA_DIR,
    HOST_PORT,
    EngineOption,
    examples,
    game_names,
    invoke,
    known_game_or_none,
)
from boulevard.games import REGISTRY

commands = typer.Typer()


@commands.command(
    epilog=examples(
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
            autocompletion=game_names,
            callback=known_game_or_none,
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
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + DATA_DIR)
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
    engine: EngineOption = None,
    dice: Annotated[
        str | None, typer.Option("--dice", metavar=HOST_PORT, help="the dice service's address")
    ] = None,
    ledger: Annotated[
        str | None, typer.Option("--ledger", metavar=HOST_PORT, help="the ledger's address")
    ] = None,
    evidence: Annotated[
        Path | None,
        typer.Option(
            "--evidence",
            metavar="FILE",
            help="write your seat's evidence here at the end (receipts, dice and ledger "
            "heads), for `boulevard audit game --evidence`",
        ),
    ] = None,
    clock: Annotated[
        str,
        typer.Option(
            "--clock",
            metavar="CONTROL",
            help="a time control: default (the game's real-time default), default/move (its "
            "turn-based default), 10m+20s (real time: base + increment per move), 1d/move or "
            "1d/move+1h (turn-based: per move + reserve), none; tables match only equal ones",
        ),
    ] = "default",
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

    invoke(
        command.run, game=game, token=token, player=player, data_dir=data_dir, seats=seats,
        bot_fill=bot_fill, matchmaking=matchmaking, engine=engine, dice=dice, ledger=ledger,
        evidence=evidence, clock=clock, resume=resume,
    )  # fmt: skip


@commands.command(epilog=examples("boulevard watch <game_id>", "boulevard watch <game_id> --tui"))
def watch(
    game_id: Annotated[str, typer.Argument(metavar="GAME_ID", help="the game to watch")],
    engine: EngineOption = None,
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

    invoke(command.run, game_id=game_id, engine=engine, speed=speed, tui=tui, dice=dice)
