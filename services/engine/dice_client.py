"""The engine's client of the dice service, over NATS request/reply (`dice.rpc.<op>`):
open a game (its commitment), fix the seats' seeds, roll, shuffle, sign the log's head,
reveal. A draw carries
the caller's request id and is retried with the same id while the service is unreachable,
so a retry can only ever get the outcome already recorded for it, never a fresh one.

The service's side is `services/dice/rpc.py`; apps and auditors read the dice through the
public gRPC API instead (`boulevard.client.dice.DiceReader`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import NoReturn

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from boulevard.api.v1 import dice_pb2
from boulevard.games.base import ChanceKind, ChanceRequest, ChanceResolved
from boulevard.messaging.requests import requests_on
from boulevard.platform import tracing
from boulevard.platform.errors import (
    Aborted,
    BoulevardError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)

_ERRORS: dict[str, type[BoulevardError]] = {
    "invalid_argument": InvalidArgument,
    "not_found": NotFound,
    "failed_precondition": FailedPrecondition,
    "aborted": Aborted,
    "unavailable": Unavailable,
}


def raise_rpc_error(error: dice_pb2.DiceRpcError) -> NoReturn:
    raise _ERRORS.get(error.code, BoulevardError)(f"dice: {error.message}")


class DiceClient:
    """The engine's side of `dice.rpc.*`. Every method is safe to call again after any
    failure: opening and revealing are idempotent per game, draws per request id."""

    def __init__(
        self,
        nc: NATS,
        prefix: str = "dice.rpc",
        timeout: float = 5.0,
        retry_for: float = 30.0,
    ) -> None:
        self._nc = nc
        self._requests = requests_on(nc)  # a request a draw: the lean path (issue 28)
        self._prefix = prefix
        self._timeout = timeout
        self._retry_for = retry_for

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int = 0
    ) -> dice_pb2.DiceCommitment:
        """Create (or find) the game's secret server seed; its public commitment. Only the
        seats' seed commitments go with it: the seeds come later, with `fix_seeds`."""
        request = dice_pb2.DiceOpenRequest(
            game_id=game_id,
            client_seed_commitments=list(seed_commitments),
            reveal_deadline_unix_ms=reveal_deadline_unix_ms,
        )
        return (await self._call("open", request)).commitment

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int] = ()
    ) -> dice_pb2.DiceClientSeeds:
        """Hand over the revealed client seeds (per seat, "" for a missing seat); the dice
        service checks each against its commitment. Idempotent."""
        request = dice_pb2.DiceSeedsRequest(
            game_id=game_id, client_seeds=list(client_seeds), missing_seats=list(missing_seats)
        )
        return (await self._call("seeds", request)).seeds

    async def roll(
        self, game_id: str, request_id: str, count: int, sides: int, purpose: str = ""
    ) -> dice_pb2.DiceOutcome:
        request = dice_pb2.DiceRollRequest(
            game_id=game_id, request_id=request_id, count=count, sides=sides, purpose=purpose
        )
        return (await self._call("roll", request)).outcome

    async def shuffle(
        self, game_id: str, request_id: str, count: int, purpose: str = ""
    ) -> dice_pb2.DiceOutcome:
        request = dice_pb2.DiceShuffleRequest(
            game_id=game_id, request_id=request_id, count=count, purpose=purpose
        )
        return (await self._call("shuffle", request)).outcome

    async def resolve(self, game_id: str, request_id: str, chance: ChanceRequest) -> ChanceResolved:
        """Answer a game's chance request; the result is the event the engine records."""
        if chance.kind == ChanceKind.ROLL:
            outcome = await self.roll(
                game_id, request_id, chance.count, chance.sides, chance.purpose
            )
        else:
            outcome = await self.shuffle(game_id, request_id, chance.count, chance.purpose)
        return ChanceResolved(
            purpose=chance.purpose,
            kind=chance.kind,
            values=tuple(outcome.values),
            nonce=outcome.nonce,
            sides=outcome.sides,  # as recorded: 0 for a shuffle
        )

    async def reveal(self, game_id: str, reason: str = "finished") -> dice_pb2.DiceReveal:
        """Publish the game's server seed; no draws are possible afterwards."""
        request = dice_pb2.DiceRevealRequest(game_id=game_id, reason=reason)
        return (await self._call("reveal", request)).reveal

    async def head(self, game_id: str) -> dice_pb2.DiceTreeHead:
        """The dice service's signed head over every leaf of the game's log so far (what
        GameFinished records). Idempotent: asked again, it is the same head unless a leaf
        was added since."""
        return (await self._call("head", dice_pb2.DiceHeadRequest(game_id=game_id))).head

    async def _call(
        self,
        op: str,
        request: dice_pb2.DiceHeadRequest
        | dice_pb2.DiceOpenRequest
        | dice_pb2.DiceSeedsRequest
        | dice_pb2.DiceRollRequest
        | dice_pb2.DiceShuffleRequest
        | dice_pb2.DiceRevealRequest,
    ) -> dice_pb2.DiceRpcReply:
        payload = request.SerializeToString()
        subject = f"{self._prefix}.{op}"
        headers: dict[str, str] = {}  # the trace context, when tracing is on
        with tracing.nats_request_span(subject, headers):
            return await self._call_with_retries(op, subject, payload, headers or None)

    async def _call_with_retries(
        self, op: str, subject: str, payload: bytes, headers: dict[str, str] | None
    ) -> dice_pb2.DiceRpcReply:
        deadline = time.monotonic() + self._retry_for
        delay = 0.05
        while True:
            try:
                msg = await self._requests.request(subject, payload, self._timeout, headers=headers)
            except (TimeoutError, NoRespondersError, NatsTimeoutError) as err:
                # The service is restarting or slow: ask again, same request, same id.
                if time.monotonic() + delay > deadline:
                    raise Unavailable(f"dice service did not answer {op}: {err!r}") from err
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            reply = dice_pb2.DiceRpcReply()
            reply.ParseFromString(msg.data)
            if reply.WhichOneof("result") == "error":
                retriable = reply.error.code in ("unavailable", "aborted")
                if retriable and time.monotonic() + delay < deadline:
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)
                    continue
                raise_rpc_error(reply.error)
            return reply
