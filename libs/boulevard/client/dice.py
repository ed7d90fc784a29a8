"""The dice service's public gRPC API (`DiceService`), for clients and auditors: with
`audit_game` a reader re-derives a finished game's outcomes locally with the pure verifier
(the log's encodings and checks are the contract's, `boulevard.contract.dice_log`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import grpc

from boulevard.api.v1 import dice_pb2, dice_pb2_grpc
from boulevard.contract.dice import to_recorded
from boulevard.contract.dice_log import PublishedOpening, check_log, check_published, parse_log
from boulevard.fairness import (
    Mismatch,
    RecordedOutcome,
    VerificationReport,
    check_accounted,
    verify_game,
)


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
