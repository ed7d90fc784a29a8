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
from boulevard.client.dice_log import PublishedOpening, check_log, check_published, parse_log
from boulevard.fairness import (
    ROLL,
    SHUFFLE,
    Mismatch,
    RecordedOutcome,
    VerificationReport,
    check_accounted,
    verify_game,
)
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
        purpose=outcome.purpose,
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

    async def _call(
        self,
        op: str,
        request: dice_pb2.DiceOpenRequest
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

    async def log_records(self, game_id: str) -> list[bytes]:
        """The game's leaf records, exactly as stored (after the reveal only)."""
        response: dice_pb2.ListLogRecordsResponse = await self._stub.ListLogRecords(
            dice_pb2.ListLogRecordsRequest(game_id=game_id), timeout=self._timeout
        )
        return [bytes(r.record) for r in response.records]

    async def log_heads(self, game_id: str, tree_size: int = 0) -> dice_pb2.GetLogHeadsResponse:
        response: dice_pb2.GetLogHeadsResponse = await self._stub.GetLogHeads(
            dice_pb2.GetLogHeadsRequest(game_id=game_id, tree_size=tree_size),
            timeout=self._timeout,
        )
        return response

    async def audit_game(
        self,
        game_id: str,
        *,
        cited: Sequence[RecordedOutcome] | None = None,
        public_key: bytes | None = None,
        held_heads: Sequence[dice_pb2.DiceTreeHead] = (),
        published: PublishedOpening | None = None,
    ) -> VerificationReport:
        """Audit a finished game's dice from the raw log, trusting nothing the service
        computes: the log's records must be exactly what its signed heads cover (under
        `public_key` when the caller pinned it, else the served key; with any heads the
        caller kept during the game), in the order the opening prescribes; every outcome
        must re-derive from the revealed seed and the seeds the seats committed to; and,
        given the outcomes the game's log `cited` (its ChanceResolved events in order),
        every recorded outcome must be used exactly once, as drawn; given what the game's
        log `published` (its commitments and fixed seeds), the dice log's opening must be
        that one."""
        served = await self.log_heads(game_id)
        key = public_key if public_key is not None else bytes(served.public_key)
        records = await self.log_records(game_id)
        problem = check_log(game_id, records, [*served.heads, *held_heads], key)
        game, order_problem = parse_log(records)
        problem = problem or order_problem
        if problem is not None:
            where = "" if problem.leaf_index is None else f"log record {problem.leaf_index}: "
            return VerificationReport(0, Mismatch(problem.code, None, where + problem.message))
        if game.opened is None or game.revealed is None:
            return VerificationReport(
                0, Mismatch("not_revealed", None, "the log holds no commitment or no reveal")
            )
        if published is not None:
            mismatch = check_published(game, published)
            if mismatch is not None:
                return VerificationReport(0, mismatch)
        seeds = game.seeds or dice_pb2.DiceClientSeeds(
            client_seeds=[""] * len(game.opened.client_seed_commitments)
        )
        recorded = [to_recorded(o) for o in game.outcomes]
        report = verify_game(
            commitment=game.opened.commitment,
            revealed_seed_hex=game.revealed.server_seed,
            client_seeds=list(seeds.client_seeds),
            game_id=game_id,
            outcomes=recorded,
            expected_count=game.revealed.outcome_count,
            scheme=game.opened.scheme,
            client_seed_commitments=list(game.opened.client_seed_commitments),
            missing_seats=list(seeds.missing_seats),
        )
        if report.ok and cited is not None:
            mismatch = check_accounted(recorded, cited)
            if mismatch is not None:
                return VerificationReport(report.checked, mismatch, report.notes)
        return report
