"""What `boulevard` tells the shell: one table of exit codes for every command.

A script needs to tell "the answer is no" (a verification failed: act on it) from "there
was no answer" (the service is down, the id is unknown, the token was refused, the command
line was wrong: retry or fix the call). Every command keeps to this table; docs/cli.md
shows it and a unit test keeps the two in step.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    CANNOT = 2
    INTERRUPTED = 130


# (code, name, meaning) — the table docs/cli.md shows.
EXIT_CODES: tuple[tuple[ExitCode, str, str], ...] = (
    (ExitCode.OK, "ok", "done; an audit or a health check passed"),
    (
        ExitCode.FAILED,
        "failed",
        "the answer is no: a verification failed (audit, dice at the end of `play`), a "
        "service is not healthy, `up` could not start the platform, a backup or restore failed",
    ),
    (
        ExitCode.CANNOT,
        "cannot",
        "there was no answer: a service cannot be reached, an id is unknown, the token is "
        "missing or refused, or the command line is wrong (usage)",
    ),
    (ExitCode.INTERRUPTED, "interrupted", "stopped with Ctrl-C before the end"),
)


def describe(code: int) -> str:
    """The name of an exit code, or 'unknown'."""
    return next((name for c, name, _ in EXIT_CODES if c == code), "unknown")
