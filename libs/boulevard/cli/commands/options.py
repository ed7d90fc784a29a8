"""What the command groups share: the examples epilog, handing options to a command's
`run(args)`, game names (completed and checked), and the options several groups take."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Annotated, Any, NoReturn

import typer

from boulevard.games import REGISTRY

HOST_PORT = "HOST:PORT"
# The engine may be several replicas (docs/operations.md, "Scaling the engine").
ENGINES = "HOST:PORT[,…]"
ENGINE_ENV = "BOULEVARD_ENGINE_TARGET"

# Relative to where the command runs: `boulevard login` in another folder finds no issuer.
DATA_DIR = " (default: BOULEVARD_DATA_DIR, else .data in the current folder)"


def examples(*lines: str) -> str:
    """An epilog: the command's examples, one per paragraph (rich keeps them apart)."""
    return "[bold]Examples[/bold]\n\n" + "\n\n".join(f"  {line}" for line in lines)


def invoke(run: Callable[[argparse.Namespace], int], **options: Any) -> NoReturn:
    """Hand the options to a command's `run(args)` and exit with its code."""
    raise typer.Exit(run(argparse.Namespace(**options)))


def game_names(incomplete: str) -> list[str]:
    return [name for name in sorted(REGISTRY) if name.startswith(incomplete)]


def known_game(name: str) -> str:
    if name not in REGISTRY:
        raise typer.BadParameter(
            f"unknown game {name!r}; choose from {', '.join(sorted(REGISTRY))}"
        )
    return name


def known_game_or_none(name: str) -> str:
    """A game argument that may be left out (`play --resume` names a game by its id)."""
    return known_game(name) if name else name


def engine_option(what: str = "") -> Any:
    """`--engine`: one address, or the engine's replicas comma-separated (each game's calls
    then go to the replica that owns its game id, `boulevard.platform.replicas`), from
    BOULEVARD_ENGINE_TARGET when not given; `what` says what the command asks it for."""
    return typer.Option(
        "--engine",
        metavar=ENGINES,
        envvar=ENGINE_ENV,
        show_envvar=True,
        help=f"the engine's address{what}, or its replicas' comma-separated (each game's "
        "calls go to the replica that owns it); default BOULEVARD_GRPC_HOST and "
        "BOULEVARD_ENGINE_PORT",
    )


EngineOption = Annotated[str | None, engine_option()]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON document (docs/cli.md)")]
# `--json` on the commands that print a verdict (audits, healthcheck).
ResultJsonOption = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
TimeoutOption = Annotated[float, typer.Option("--timeout", help="seconds per call")]
