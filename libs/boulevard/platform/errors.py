"""Domain errors and the one place that maps them to gRPC status codes.

Services raise these (or let a game's RulesError through); the server interceptor turns
them into a precise status with a readable message. Anything else becomes INTERNAL with
the details logged, never UNKNOWN.
"""

from __future__ import annotations

import re

import grpc

from boulevard.games.base import RulesError


class BoulevardError(Exception):
    """Root of the platform's errors; `status` says how a client sees it."""

    status: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidArgument(BoulevardError):
    status = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(BoulevardError):
    status = grpc.StatusCode.NOT_FOUND


class AlreadyExists(BoulevardError):
    status = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(BoulevardError):
    status = grpc.StatusCode.FAILED_PRECONDITION


class PermissionDenied(BoulevardError):
    status = grpc.StatusCode.PERMISSION_DENIED


class Unauthenticated(BoulevardError):
    status = grpc.StatusCode.UNAUTHENTICATED


class Aborted(BoulevardError):
    """A lost race: the caller may reload and retry."""

    status = grpc.StatusCode.ABORTED


class Unavailable(BoulevardError):
    status = grpc.StatusCode.UNAVAILABLE


class OutOfRange(BoulevardError):
    """A position past the end of what exists yet (a tree size or leaf beyond the log): the
    same request may succeed later, unlike INVALID_ARGUMENT."""

    status = grpc.StatusCode.OUT_OF_RANGE


class ResourceExhausted(BoulevardError):
    """A bounded resource (e.g. concurrent streams) is full: retry later."""

    status = grpc.StatusCode.RESOURCE_EXHAUSTED


MAX_QUOTE = 64
"""The most characters of any one quoted input an error message repeats."""
MAX_MESSAGE = 512
"""The longest status message a client gets (a huge one stalls some clients' deadlines)."""

_QUOTED = re.compile(
    rf"'([^'\n]{{{MAX_QUOTE}}})[^'\n]+'" + "|" + rf'"([^"\n]{{{MAX_QUOTE}}})[^"\n]+"'
)


def clip(message: str) -> str:
    """`message` with every quoted input cut to MAX_QUOTE characters and the whole to
    MAX_MESSAGE: error messages name what was wrong, they do not echo it back."""

    def shorten(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return f"'{m.group(1)}…'"
        return f'"{m.group(2)}…"'

    clipped = _QUOTED.sub(shorten, message)
    if len(clipped) > MAX_MESSAGE:
        clipped = clipped[: MAX_MESSAGE - 1] + "…"
    return clipped


def status_of(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    """The status and (clipped) message for a known error, or None for an unexpected one."""
    found = _status_of(exc)
    return None if found is None else (found[0], clip(found[1]))


def _status_of(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    if isinstance(exc, BoulevardError):
        return exc.status, str(exc)
    if isinstance(exc, RulesError):
        code = (
            grpc.StatusCode.INVALID_ARGUMENT
            if exc.code == "malformed"
            else grpc.StatusCode.FAILED_PRECONDITION
        )
        return code, f"{exc.code}: {exc.message}"
    # Imported lazily: the event store imports this module.
    from boulevard.eventlog.errors import ConcurrencyConflict

    if isinstance(exc, ConcurrencyConflict):
        return grpc.StatusCode.ABORTED, str(exc)
    if nats_unavailable(exc):
        return grpc.StatusCode.UNAVAILABLE, (
            f"NATS did not answer ({type(exc).__name__}); the service is reconnecting: retry later"
        )
    return None


def nats_unavailable(exc: BaseException) -> bool:
    """Whether `exc` says NATS (or a service behind it) is out of reach, not that a request
    was wrong: a timeout, a closed or reconnecting connection, no responders, a JetStream 503."""
    import nats.errors
    import nats.js.errors

    return isinstance(
        exc,
        TimeoutError  # nats.errors.TimeoutError too, and asyncio.wait_for on a NATS read
        | nats.errors.ConnectionClosedError
        | nats.errors.ConnectionReconnectingError
        | nats.errors.ConnectionDrainingError
        | nats.errors.OutboundBufferLimitError
        | nats.errors.StaleConnectionError
        | nats.errors.NoServersError
        | nats.errors.NoRespondersError
        | nats.errors.UnexpectedEOF
        | nats.js.errors.ServiceUnavailableError
        | nats.js.errors.NoStreamResponseError,
    )
