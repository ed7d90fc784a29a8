"""The `boulevard` command's entry point (the console script, `python -m
boulevard.cli.main`, and `main([...])` in tests): the typer app of `boulevard.cli.app`,
returning its exit code (`boulevard.cli.exits`) instead of leaving the interpreter."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import typer

from boulevard.cli.app import app
from boulevard.cli.exits import ExitCode

PROG = "boulevard"  # also names the completion variable, _BOULEVARD_COMPLETE


def main(argv: Sequence[str] | None = None) -> int:
    command = typer.main.get_command(app)
    try:
        command.main(args=list(argv) if argv is not None else None, prog_name=PROG)
    except SystemExit as done:
        if done.code is None:
            return ExitCode.OK
        return done.code if isinstance(done.code, int) else ExitCode.FAILED
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
