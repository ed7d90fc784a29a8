"""Clients of the dice service.

- `DiceClient`: what the engine uses, over NATS request/reply (`dice.rpc.<op>`): open a game
  (its commitment), roll, shuffle, reveal. A draw carries the caller's request id and is
  retried with the same id while the service is unreachable, so a retry can only ever get the
  outcome already recorded for it, never a fresh one.
- `DiceReader`: what clients and auditors use, over the public gRPC `DiceService`; with
  `audit_game` it re-derives a finished game's outcomes locally with the pure verifier.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import NoReturn

import grpc
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from boulevard.api.v1 import dice_pb2, dice_pb2_grpc
from boulevard.fairness import ROLL, SHUFFLE, RecordedOutcome, VerificationReport, verify_game
from boulevard.games.base import ChanceKind, ChanceRequest, ChanceResolved
from boulevard.platform import tracing
from boulevard.platform.errors import (
    Aborted,
    BoulevardError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)

KIND_TO_PROTO = {ROLL: dice_pb2.OUTCOME_KIND_ROLL, SHUFFLE: dice_pb2.OUTCOME_KIND_SHUFFLE}
PROTO_TO_KIND = {v: k for k, v in KIND_TO_PROTO.items()}

_ERRORS: dict[str, type[BoulevardError]] = {
    "invalid_argument": InvalidArgument,
    "not_found": NotFound,
    "failed_precondition": FailedPrecondition,
    "aborted": Aborted,
    "unavailable": Unavailable,
}


def kind_name(kind: dice_pb2.OutcomeKind.ValueType) -> str:
    """ "roll" or "shuffle" for a proto kind; "" for anything else."""
    return PROTO_TO_KIND.get(kind, "")


def to_recorded(outcome: dice_pb2.DiceOutcome) -> RecordedOutcome:
    """A recorded outcome from the wire, for the pure verifier."""
    return RecordedOutcome(
        nonce=outcome.nonce,
        kind=kind_name(outcome.kind),
        count=outcome.count,
        sides=outcome.sides,
        values=tuple(outcome.values),
    )


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
        self._prefix = prefix
        self._timeout = timeout
        self._retry_for = retry_for

    async def open_game(self, game_id: str, client_seeds: Sequence[str]) -> dice_pb2.DiceCommitment:
        """Create (or find) the game's secret server seed; its public commitment."""
        request = dice_pb2.DiceOpenRequest(game_id=game_id, client_seeds=list(client_seeds))
        return (await self._call("open", request)).commitment

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
            sides=chance.sides,
        )

    async def reveal(self, game_id: str, reason: str = "finished") -> dice_pb2.DiceReveal:
        """Publish the game's server seed; no draws are possible afterwards."""
        request = dice_pb2.DiceRevealRequest(game_id=game_id, reason=reason)
        return (await self._call("reveal", request)).reveal

    async def _call(
        self,
        op: str,
        request: dice_pb2.DiceOpenRequest
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
                msg = await self._nc.request(
                    subject, payload, timeout=self._timeout, headers=headers
                )
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


class DiceReader:
    """The public gRPC API of the dice service, for clients and auditors."""

    def __init__(self, channel: grpc.aio.Channel, timeout: float = 10.0) -> None:
        self._stub = dice_pb2_grpc.DiceServiceStub(channel)
        self._timeout = timeout

    async def get_commitment(self, game_id: str) -> dice_pb2.GetCommitmentResponse:
        request = dice_pb2.GetCommitmentRequest(game_id=game_id)
        response: dice_pb2.GetCommitmentResponse = await self._stub.GetCommitment(
            request, timeout=self._timeout
        )
        return response

    async def outcomes(
        self, game_id: str, page_size: int = 500
    ) -> AsyncIterator[dice_pb2.DiceOutcome]:
        """Every recorded outcome of the game, in recorded order, page by page."""
        token = ""
        while True:
            request = dice_pb2.ListOutcomesRequest(
                game_id=game_id, page_size=page_size, page_token=token
            )
            page: dice_pb2.ListOutcomesResponse = await self._stub.ListOutcomes(
                request, timeout=self._timeout
            )
            for outcome in page.outcomes:
                yield outcome
            token = page.next_page_token
            if not token:
                return

    async def get_reveal(self, game_id: str) -> dice_pb2.DiceReveal:
        request = dice_pb2.GetRevealRequest(game_id=game_id)
        response: dice_pb2.GetRevealResponse = await self._stub.GetReveal(
            request, timeout=self._timeout
        )
        return response.reveal

    async def verify_remote(self, game_id: str) -> dice_pb2.VerifyGameResponse:
        """The service's own verification (for convenience; an auditor uses audit_game)."""
        request = dice_pb2.VerifyGameRequest(game_id=game_id)
        response: dice_pb2.VerifyGameResponse = await self._stub.VerifyGame(
            request, timeout=self._timeout
        )
        return response

    async def audit_game(self, game_id: str) -> VerificationReport:
        """Fetch the commitment, the outcomes and the reveal, and re-derive every outcome
        locally with `boulevard.fairness.verify_game`: nothing the service computes is
        trusted, only the records it serves."""
        commitment = (await self.get_commitment(game_id)).commitment
        reveal = await self.get_reveal(game_id)
        outcomes = [to_recorded(o) async for o in self.outcomes(game_id)]
        return verify_game(
            commitment=commitment.commitment,
            revealed_seed_hex=reveal.server_seed,
            client_seeds=list(commitment.client_seeds),
            game_id=game_id,
            outcomes=outcomes,
            expected_count=reveal.outcome_count,
            scheme=commitment.scheme,
        )
