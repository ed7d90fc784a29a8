"""`boulevard audit ledger|dice|game|all`: verify dice, games and money without trusting
the operator (the work: `boulevard.cli.audit_ledger`, `audit_dice`, `audit_game`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from boulevard.cli.commands.options import (
    HOST_PORT,
    EngineOption,
    JsonOption,
    ResultJsonOption,
    TimeoutOption,
    engine_option,
    examples,
    game_names,
    invoke,
)

audit_app = typer.Typer(
    help="Verify dice, games and money without trusting the operator.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

EngineAddress = EngineOption
DiceAddress = Annotated[
    str | None, typer.Option("--dice", metavar=HOST_PORT, help="the dice service's address")
]
LedgerAddress = Annotated[
    str | None, typer.Option("--ledger", metavar=HOST_PORT, help="the ledger's address")
]
MatchmakingAddress = Annotated[
    str | None,
    typer.Option(
        "--matchmaking",
        metavar=HOST_PORT,
        help="the matchmaker's address: compare a matchmade game's seats with its match",
    ),
]
NoDice = Annotated[bool, typer.Option("--no-dice", help="do not compare with the dice records")]
NoLedger = Annotated[bool, typer.Option("--no-ledger", help="do not compare with the ledger")]
GameIdArgument = Annotated[str, typer.Argument(metavar="GAME_ID", help="the game to audit")]
TrustOption = Annotated[
    Path | None,
    typer.Option(
        "--trust",
        metavar="FILE",
        help="a key history you keep (boulevard keys pin): fail on any key not in it, or a "
        "served history that rewrites it",
    ),
]
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
    epilog=examples(
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

    invoke(
        command.run, game=game, address=address, public_key=public_key,
        no_reconcile=no_reconcile, quiet=quiet, html=html, json=as_json,
    )  # fmt: skip


@audit_app.command(
    "dice",
    epilog=examples(
        "boulevard audit dice <game_id>",
        "boulevard audit dice <game_id> --dice-key <hex> --json",
    ),
)
def audit_dice(
    game_id: GameIdArgument,
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
        str | None, engine_option(", to check the game used exactly the recorded outcomes")
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
    as_json: ResultJsonOption = False,
    html: HtmlOption = None,
    timeout: TimeoutOption = 10.0,
) -> None:
    """Re-derive every roll and shuffle of a finished game from its revealed seed.

    Exit 0 pass, 1 failed, 2 cannot audit (unreachable, unknown game, seed not revealed)."""
    from boulevard.cli import audit_dice as command

    invoke(
        command.run, game_id=game_id, dice=dice, engine=engine, no_engine=no_engine,
        dice_key=dice_key, json=as_json, html=html, timeout=timeout,
    )  # fmt: skip


@audit_app.command(
    "game",
    epilog=examples(
        "boulevard audit game <game_id>",
        "boulevard audit game <game_id> --receipts mine.jsonl --json",
    ),
)
def audit_game(
    game_id: GameIdArgument,
    engine: EngineAddress = None,
    dice: DiceAddress = None,
    ledger: LedgerAddress = None,
    matchmaking: MatchmakingAddress = None,
    no_dice: NoDice = False,
    no_ledger: NoLedger = False,
    timeout: TimeoutOption = 30.0,
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
    trust: TrustOption = None,
    as_json: ResultJsonOption = False,
    html: HtmlOption = None,
) -> None:
    """Re-run a game's rules over its signed, hash-chained log.

    Exit 0 pass, 1 a check failed, 2 cannot audit."""
    from boulevard.cli import audit_game as command

    invoke(
        command.run_game, game_id=game_id, engine=engine, dice=dice, ledger=ledger,
        no_dice=no_dice, no_ledger=no_ledger, timeout=timeout, receipts=receipts,
        engine_key=engine_key, json=as_json, html=html, evidence=evidence, trust=trust,
        matchmaking=matchmaking,
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
    epilog=examples(
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
    matchmaking: MatchmakingAddress = None,
    no_dice: NoDice = False,
    no_ledger: NoLedger = False,
    timeout: TimeoutOption = 30.0,
    limit: Annotated[int, typer.Option("--limit", help="audit at most this many games")] = 0,
    game_name: Annotated[
        str,
        typer.Option(
            "--game-name", help="only games of this registry name", autocompletion=game_names
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
    trust: TrustOption = None,
    html: HtmlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Audit every game, running ones to their last version (rules, dice), then the ledger.

    One line per game (a progress bar too on a terminal). Exit 0 all pass, 1 any failed, 2
    cannot audit."""
    from boulevard.cli import audit_game as command

    invoke(
        command.run_all, engine=engine, dice=dice, ledger=ledger, no_dice=no_dice,
        no_ledger=no_ledger, timeout=timeout, limit=limit, game_name=game_name, html=html,
        json=as_json, since=since, evidence=evidence, trust=trust, matchmaking=matchmaking,
    )  # fmt: skip
