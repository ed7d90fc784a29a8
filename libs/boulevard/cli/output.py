"""How `boulevard` writes for people and for scripts.

People get colour, tables and progress bars on a terminal; a pipe, a file or a CI log gets
the same words as plain text (no escape codes, no bars), and NO_COLOR turns colour off on a
terminal too (rich reads it). `--json` output is written as one JSON document on stdout,
never through rich, so `jq` always reads it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

PIPE_WIDTH = 200  # a pipe has no width: do not wrap rows at 80 columns

# After an UNAVAILABLE, whose own words ("failed to connect to all addresses", or "Socket
# closed" from a TLS port spoken to in plaintext) do not say what to do.
UNREACHABLE_HINT = (
    " — is the platform up (make run, or boulevard up)? One started with --tls needs "
    "boulevard --tls-ca <data-dir>/tls/ca.pem"
)


def hint(code_name: str) -> str:
    """What a person can do after a call failed with this status ('' when its words say)."""
    return UNREACHABLE_HINT if code_name == "UNAVAILABLE" else ""


def console(stderr: bool = False) -> Console:
    out = sys.stderr if stderr else sys.stdout
    terminal = out.isatty()
    return Console(
        file=out,
        highlight=False,
        soft_wrap=not terminal,
        width=None if terminal else PIPE_WIDTH,
    )


def print_json(document: Any) -> None:
    """One JSON document on stdout, keys in the order built (the order docs/cli.md lists)."""
    sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    out: Console | None = None,
    right: Sequence[str] = (),
) -> None:
    """A table of rows; boxed and coloured on a terminal, aligned plain columns elsewhere.
    The columns named in `right` (numbers) are right-aligned."""
    out = out or console()
    if title:  # above the table, not its caption: a caption wraps to the table's width
        out.print(title, style="bold" if out.is_terminal else None, markup=False)
    shown = Table(
        box=box.SIMPLE_HEAD if out.is_terminal else None,
        header_style="bold cyan" if out.is_terminal else "",
        show_edge=False,
        pad_edge=False,
    )
    for column in columns:
        shown.add_column(column, overflow="fold", justify="right" if column in right else "left")
    for row in rows:
        shown.add_row(*(str(cell) for cell in row))
    out.print(shown)


@contextmanager
def progress(description: str, total: int, *, stderr: bool = False) -> Iterator[Callable[[], None]]:
    """A progress bar on a terminal for work of `total` steps; call the yielded function
    after each step. Off a terminal it draws nothing (the command's own lines say enough)."""
    out = console(stderr=stderr)
    if not out.is_terminal or total <= 0:
        yield lambda: None
        return
    bar = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        transient=True,
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda: bar.advance(task)
