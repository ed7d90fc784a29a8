"""The `boulevard` command: the root of every sub-command, in one place.

Built on typer (options typed from the signatures, shell completion with
`--install-completion`/`--show-completion`) and rich (coloured help, tables, progress
bars; plain text off a terminal and with NO_COLOR). The options and help of each group of
commands live in `boulevard.cli.commands` (up, admin, play, reads, audits), their work in
the modules beside it (`up`, `audit_dice`, `reads`, …); this module puts the groups
together under one root, in the order `--help` lists them. Exit codes:
`boulevard.cli.exits` (0 ok, 1 failed, 2 cannot, 130 interrupted), documented with every
command in docs/cli.md.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Annotated

import typer

from boulevard.cli import output
from boulevard.cli.commands import admin, audits, play, reads, up
from boulevard.cli.commands.options import JsonOption

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
app.add_typer(audits.audit_app, name="audit")
app.add_typer(admin.issuer_app, name="issuer")
app.add_typer(reads.game_app, name="game")
app.add_typer(reads.ledger_app, name="ledger")
app.add_typer(admin.keys_app, name="keys")
for _group in (up, admin, play, reads):  # their order is the order of `--help`
    app.registered_commands.extend(_group.commands.registered_commands)


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


for _typer in (
    app,
    audits.audit_app,
    admin.issuer_app,
    admin.keys_app,
    reads.game_app,
    reads.ledger_app,
):
    for _info in _typer.registered_commands:
        if _info.help is None and _info.callback is not None and _info.callback.__doc__:
            _info.help = _unwrap(_info.callback.__doc__)
