"""`boulevard up`: NATS and the services, a demo game and its audit (the work:
`boulevard.cli.up`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from boulevard.cli.commands.options import DATA_DIR, examples, game_names, invoke

commands = typer.Typer()


@commands.command(
    epilog=examples(
        "boulevard up", "boulevard up --no-demo --tls", "boulevard up --exit-after-demo --speed 0"
    )
)
def up(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="the platform's folder: NATS's store, keys, the token issuer, logs" + DATA_DIR,
        ),
    ] = None,
    services: Annotated[
        str, typer.Option("--services", help="comma-separated services to start")
    ] = "matchmaking,engine,dice,ledger",
    no_demo: Annotated[bool, typer.Option("--no-demo", help="do not play the demo game")] = False,
    demo: Annotated[
        str,
        typer.Option(
            "--demo", metavar="GAME", help="the game the demo plays", autocompletion=game_names
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

    invoke(
        up_command.run, data_dir=data_dir, services=services, no_demo=no_demo, demo=demo,
        speed=speed, verbose=verbose, exit_after_demo=exit_after_demo, timeout=timeout,
        tls=use_tls, cluster=cluster,
    )  # fmt: skip
