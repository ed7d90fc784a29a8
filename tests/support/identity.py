"""Bearer tokens for tests: one local issuer (an Ed25519 key and a JWKS file in a temporary
folder) for the whole test session, and helpers to call as a player or an operator.

Services under test read `jwks_path()` (BOULEVARD_AUTH_JWKS); tests mint tokens with
`mint(...)` or use `player_md(name)` / `operator_md()` as gRPC call metadata.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import Any

import grpc

from boulevard.platform.identity import OPERATOR, PLAYER, LocalIssuer, bearer

OPERATOR_NAME = "test-operator"


@cache
def session_issuer() -> LocalIssuer:
    folder = Path(tempfile.mkdtemp(prefix="boulevard-issuer-"))
    atexit.register(shutil.rmtree, folder, True)
    return LocalIssuer.ensure(folder / "issuer")


def jwks_path() -> str:
    return str(session_issuer().jwks_path)


def auth_env() -> dict[str, str]:
    """The environment a service process needs to verify the test issuer's tokens."""
    issuer = session_issuer()
    return {
        "BOULEVARD_AUTH_JWKS": str(issuer.jwks_path),
        "BOULEVARD_AUTH_ISSUER": issuer.issuer,
        "BOULEVARD_AUTH_AUDIENCE": issuer.audience,
    }


def mint(subject: str, roles: tuple[str, ...] = (PLAYER,), ttl: float = 3600, **extra: Any) -> str:
    return session_issuer().mint(subject, roles, ttl, **extra)


@cache
def player_md(name: str) -> tuple[tuple[str, str], ...]:
    return bearer(mint(name))


@cache
def operator_md(name: str = OPERATOR_NAME) -> tuple[tuple[str, str], ...]:
    return bearer(mint(name, (OPERATOR,)))


# ---- a channel whose calls carry the right player's token ----------------------------------

# ticket id -> the player who created it, shared by every channel in the test process, so a
# ticket made through one replica is read as its owner through another.
_OWNERS: dict[str, str] = {}


def _with_auth(details: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
    if details.metadata:  # the test chose its own credentials
        return details
    return details._replace(metadata=grpc.aio.Metadata(*metadata))


def _md_for(request: Any) -> tuple[tuple[str, str], ...]:
    player = getattr(request, "player_id", "")
    if player and hasattr(request, "request_id"):  # CreateTicket: as that player
        return player_md(player)
    owner = _OWNERS.get(getattr(request, "ticket_id", ""))
    return player_md(owner) if owner else operator_md()


class _AsPlayer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(
        self, continuation: Callable[..., Awaitable[Any]], details: Any, request: Any
    ) -> Any:
        response = await (await continuation(_with_auth(details, _md_for(request)), request))
        ticket = getattr(response, "ticket", None)
        if ticket is not None and ticket.ticket_id and ticket.player_id:
            _OWNERS.setdefault(ticket.ticket_id, ticket.player_id)
        return response


class _AsPlayerStreaming(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    # grpc.aio files an interceptor under the first kind it is, so each kind is its own class.
    async def intercept_unary_stream(
        self, continuation: Callable[..., Awaitable[Any]], details: Any, request: Any
    ) -> Any:
        return await continuation(_with_auth(details, _md_for(request)), request)


def as_players_channel(address: str) -> grpc.aio.Channel:
    """A channel to matchmaking on which each call acts as the player it concerns: a
    CreateTicket as its `player_id`, a ticket call as the ticket's creator (an operator for
    a ticket this process never created). Calls that set their own metadata keep it."""
    return grpc.aio.insecure_channel(address, interceptors=[_AsPlayer(), _AsPlayerStreaming()])
