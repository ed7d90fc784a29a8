"""The operator's commands: tokens from the local issuer, NATS identities, TLS
certificates, backups, health checks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from boulevard.cli.commands.options import (
    DATA_DIR,
    HOST_PORT,
    EngineOption,
    ResultJsonOption,
    examples,
    invoke,
)

commands = typer.Typer()
issuer_app = typer.Typer(
    help="Manage the local token issuer.", no_args_is_help=True, rich_markup_mode="rich"
)
keys_app = typer.Typer(
    help="The platform's keys, for auditors to pin.", no_args_is_help=True,
    rich_markup_mode="rich",
)  # fmt: skip


@keys_app.command(
    "history",
    epilog=examples(
        "boulevard keys history",
        "boulevard keys history --previous engine=old-engine-key",
        "boulevard keys history --out keys.json",
    ),
)
def keys_history(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="the key history to write or extend; default: <data dir>/keys/history.json, "
            "the one the engine serves",
        ),
    ] = None,
    previous: Annotated[
        list[str] | None,
        typer.Option(
            "--previous",
            metavar="ROLE=SEEDFILE",
            help="a rotated role's previous key (its seed file), to sign the new one",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + DATA_DIR)
    ] = None,
) -> None:
    """Publish the platform's keys (engine, dice, ledger, bots) as a key history: each new key
    signed by the one before it. The engine serves it; auditors pin it with `keys pin`.

    Exit 0 written, 2 cannot."""
    from boulevard.cli import keys as command

    invoke(command.run, out=out, previous=previous, data_dir=data_dir)


@keys_app.command(
    "pin",
    epilog=examples(
        "boulevard keys pin keys.json",
        "boulevard keys pin keys.json --engine 10.0.0.5:50052",
    ),
)
def keys_pin(
    trust: Annotated[
        Path, typer.Argument(metavar="FILE", help="the key history you keep (made when missing)")
    ],
    engine: EngineOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="seconds per call")] = 30.0,
) -> None:
    """Keep the key history the platform serves, for `audit … --trust FILE`.

    A first pin takes the platform's word; later ones accept the served history only if it
    extends FILE (a rotation signed by a kept key), and fail on one that rewrites it.
    Exit 0 pinned, 1 rewritten, 2 cannot."""
    from boulevard.cli import keys as command

    invoke(command.pin, trust=trust, engine=engine, timeout=timeout)


@commands.command(
    epilog=examples(
        "boulevard login alice",
        "boulevard login olga --role operator",
        "boulevard login alice --web",
    )
)
def login(
    name: Annotated[
        str, typer.Argument(metavar="NAME", help="the player (or operator) id: the token's subject")
    ],
    role: Annotated[str, typer.Option("--role", help="player, operator or auditor")] = "player",
    ttl: Annotated[float, typer.Option("--ttl", help="seconds the token is valid")] = 3600.0,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + DATA_DIR)
    ] = None,
    web: Annotated[
        bool,
        typer.Option(
            "--web", help="print the web app's address with the token in its #fragment instead"
        ),
    ] = False,
    web_url: Annotated[
        str,
        typer.Option("--web-url", help="the web app's address (default: this machine's gateway)"),
    ] = "",
) -> None:
    """Print a bearer token from the local issuer `boulevard up` made."""
    from boulevard.cli import login as login_command
    from boulevard.platform.identity import ROLES

    if role not in ROLES:
        raise typer.BadParameter(f"choose from {', '.join(sorted(ROLES))}", param_hint="--role")
    invoke(
        login_command.login, name=name, role=role, ttl=ttl, data_dir=data_dir, web=web,
        web_url=web_url,
    )  # fmt: skip


@issuer_app.command("rotate", epilog=examples("boulevard issuer rotate"))
def issuer_rotate(
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="the data dir of `boulevard up`" + DATA_DIR)
    ] = None,
) -> None:
    """Add a new signing key to the local issuer.

    The JWKS keeps the previous one, so tokens handed out still work until they expire."""
    from boulevard.cli import login as login_command

    invoke(login_command.rotate_key, data_dir=data_dir)


@commands.command("nats-identities", epilog=examples("boulevard nats-identities deploy/nats-ids"))
def nats_identities(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="where to keep the seeds (made, mode 0700)")
    ],
) -> None:
    """Make the NATS identities (nkeys) of a deployment and the secrets file to copy."""
    from boulevard.cli import nats_identities as command

    invoke(command.run, dir=directory)


@commands.command(
    "tls-certs", epilog=examples("boulevard tls-certs deploy/tls --host engine.example")
)
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

    invoke(command.run, dir=directory, host=host or [], days=days)


@commands.command(epilog=examples("boulevard backup GAMES games.bak"))
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

    invoke(command._run_backup, stream=stream, file=file)


@commands.command(epilog=examples("boulevard restore games.bak"))
def restore(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="a `boulevard backup` file")],
) -> None:
    """Create a stream from a `boulevard backup` file (never over an existing one)."""
    from boulevard.cli import backup as command

    invoke(command._run_restore, file=file)


@commands.command(
    epilog=examples(
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
    as_json: ResultJsonOption = False,
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
