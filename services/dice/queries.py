"""The read side of the dice service: what the public gRPC API serves, straight from the
DICE stream (the evidence itself, not the dealer's cache)."""

from __future__ import annotations

from dataclasses import dataclass, field

from boulevard.api.v1 import dice_pb2
from boulevard.fairness import verify_game
from boulevard.platform import metrics
from boulevard.platform.errors import FailedPrecondition, InvalidArgument, NotFound
from services.dice.dealer import check_game_id
from services.dice.mapping import to_recorded, verification_response
from services.dice.store import DiceLog

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


@dataclass
class GameRecords:
    opened: dice_pb2.DiceCommitment | None = None
    outcomes: list[dice_pb2.DiceOutcome] = field(default_factory=list)
    revealed: dice_pb2.DiceReveal | None = None


class DiceQueries:
    def __init__(self, dice_log: DiceLog) -> None:
        self._log = dice_log

    async def records(self, game_id: str) -> GameRecords:
        check_game_id(game_id)
        stored, _ = await self._log.read(game_id)
        if not stored:
            raise NotFound(f"no dice game {game_id}")
        game = GameRecords()
        for item in stored:
            which = item.record.WhichOneof("record")
            if which == "opened" and game.opened is None:
                game.opened = item.record.opened
            elif which == "outcome":
                game.outcomes.append(item.record.outcome)
            elif which == "revealed" and game.revealed is None:
                game.revealed = item.record.revealed
        if game.opened is None:
            raise FailedPrecondition(f"the dice log of {game_id} has no commitment record")
        return game

    async def get_commitment(self, game_id: str) -> dice_pb2.GetCommitmentResponse:
        game = await self.records(game_id)
        return dice_pb2.GetCommitmentResponse(
            commitment=game.opened,
            outcome_count=len(game.outcomes),
            revealed=game.revealed is not None,
        )

    async def list_outcomes(
        self, game_id: str, page_size: int, page_token: str
    ) -> dice_pb2.ListOutcomesResponse:
        check_game_id(game_id)
        size = page_size or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise InvalidArgument(f"page size must be 1..{MAX_PAGE_SIZE}")
        start = 1
        if page_token:
            if not page_token.isdigit() or int(page_token) < 1:
                raise InvalidArgument("page token is not one this service issued")
            start = int(page_token)
        stored, last = await self._log.read(game_id, start, size)
        if last == 0:
            raise NotFound(f"no dice game {game_id}")
        response = dice_pb2.ListOutcomesResponse(
            outcomes=[s.record.outcome for s in stored if s.record.HasField("outcome")]
        )
        if stored and stored[-1].seq < last:
            response.next_page_token = str(stored[-1].seq + 1)
        return response

    async def get_reveal(self, game_id: str) -> dice_pb2.GetRevealResponse:
        game = await self.records(game_id)
        if game.revealed is None:
            raise FailedPrecondition(f"the seed of game {game_id} is not revealed yet")
        return dice_pb2.GetRevealResponse(reveal=game.revealed)

    async def verify(self, game_id: str) -> dice_pb2.VerifyGameResponse:
        game = await self.records(game_id)
        if game.revealed is None or game.opened is None:
            raise FailedPrecondition(f"game {game_id} cannot be verified before its reveal")
        report = verify_game(
            commitment=game.opened.commitment,
            revealed_seed_hex=game.revealed.server_seed,
            client_seeds=list(game.opened.client_seeds),
            game_id=game_id,
            outcomes=[to_recorded(o) for o in game.outcomes],
            expected_count=game.revealed.outcome_count,
            scheme=game.opened.scheme,
        )
        metrics.DICE_VERIFICATIONS.labels("pass" if report.ok else "fail").inc()
        return verification_response(report)
