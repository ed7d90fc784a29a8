"""The read side of the dice service: what the public gRPC API serves, straight from the
DICE stream (the evidence itself, not the dealer's cache).

Secret until used: before a game's seed is revealed no answer carries an outcome's values
(nor its blinding, which would let anyone test guesses against the leaf hashes): outcomes
are listed without them, the log's records are refused, and only signed heads and proofs
(hashes of blinded leaves) are served.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from boulevard.accounting.errors import VerificationFailed
from boulevard.accounting.merkle import MerkleTree
from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice_log import parse_log, signed_view, split_messages
from boulevard.fairness import seed_matches_commitment, verify_game
from boulevard.platform import metrics
from boulevard.platform.errors import FailedPrecondition, InvalidArgument, NotFound, OutOfRange
from services.dice.dealer import check_game_id
from services.dice.mapping import to_recorded, verification_response
from services.dice.store import DiceLog

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


@dataclass
class GameRecords:
    opened: dice_pb2.DiceCommitment | None = None
    seeds: dice_pb2.DiceClientSeeds | None = None
    outcomes: list[dice_pb2.DiceOutcome] = field(default_factory=list)
    revealed: dice_pb2.DiceReveal | None = None
    leaves: list[bytes] = field(default_factory=list)
    heads: list[dice_pb2.DiceTreeHead] = field(default_factory=list)

    def tree(self) -> MerkleTree:
        tree = MerkleTree()
        for data in self.leaves:
            tree.append(data)
        return tree


class DiceQueries:
    """Answers from the DICE stream as stored: a leaf is stored with its head (one message,
    or two awaited before the draw's reply), so what the engine was told is here."""

    def __init__(self, dice_log: DiceLog, public_key: bytes) -> None:
        self._log = dice_log
        self.public_key = public_key

    async def records(self, game_id: str) -> GameRecords:
        check_game_id(game_id)
        stored, _ = await self._log.read(game_id)
        if not stored:
            raise NotFound(f"no dice game {game_id}")
        game = GameRecords()
        messages = [(i.record, i.data) for i in stored]
        # Every leaf and head of the raw log, in either stored form: an audit of it.
        game.leaves, game.heads = split_messages(messages)
        # What the service signed is what it answers from; records someone else put on the
        # subject are served only raw (ListLogRecords), where an audit names them.
        view = signed_view(game_id, messages, self.public_key)
        parsed, _problem = parse_log(view.trusted)
        game.opened, game.seeds, game.revealed = parsed.opened, parsed.seeds, parsed.revealed
        game.outcomes = parsed.outcomes
        if game.opened is None:
            raise FailedPrecondition(f"the dice log of {game_id} has no commitment record")
        if game.revealed is None:
            # A genuine reveal (the committed seed) opens the records even where the log was
            # tampered with after it; a fake one opens nothing.
            game.revealed = next(
                (
                    reveal
                    for reveal in _reveals(game.leaves)
                    if seed_matches_commitment(reveal.server_seed, game.opened.commitment)
                ),
                None,
            )
        return game

    async def get_commitment(self, game_id: str) -> dice_pb2.GetCommitmentResponse:
        game = await self.records(game_id)
        response = dice_pb2.GetCommitmentResponse(
            commitment=game.opened,
            outcome_count=len(game.outcomes),
            revealed=game.revealed is not None,
        )
        if game.seeds is not None:
            response.seeds.CopyFrom(game.seeds)
        return response

    async def list_outcomes(
        self, game_id: str, page_size: int, page_token: str
    ) -> dice_pb2.ListOutcomesResponse:
        check_game_id(game_id)
        size = page_size or DEFAULT_PAGE_SIZE
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise InvalidArgument(f"page size must be 1..{MAX_PAGE_SIZE}")
        start = 0
        if page_token:
            if not page_token.isdigit():
                raise InvalidArgument("page token is not one this service issued")
            start = int(page_token)
        game = await self.records(game_id)
        hidden = game.revealed is None
        page = game.outcomes[start : start + size]
        response = dice_pb2.ListOutcomesResponse(values_hidden=hidden)
        for outcome in page:
            shown = response.outcomes.add()
            shown.CopyFrom(outcome)
            if hidden:
                shown.ClearField("values")
                shown.ClearField("blinding")
        if start + size < len(game.outcomes):
            response.next_page_token = str(start + size)
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
        seeds = game.seeds or dice_pb2.DiceClientSeeds(
            client_seeds=[""] * len(game.opened.client_seed_commitments)
        )
        report = verify_game(
            commitment=game.opened.commitment,
            revealed_seed_hex=game.revealed.server_seed,
            client_seeds=list(seeds.client_seeds),
            game_id=game_id,
            outcomes=[to_recorded(o) for o in game.outcomes],
            expected_count=game.revealed.outcome_count,
            scheme=game.opened.scheme,
            client_seed_commitments=list(game.opened.client_seed_commitments),
            missing_seats=list(seeds.missing_seats),
        )
        metrics.DICE_VERIFICATIONS.labels("pass" if report.ok else "fail").inc()
        return verification_response(report)

    # ---- the signed outcome log -----------------------------------------------------------

    async def log_records(self, game_id: str) -> dice_pb2.ListLogRecordsResponse:
        game = await self.records(game_id)
        if game.revealed is None:
            raise FailedPrecondition(
                f"game {game_id} is not revealed yet: its outcome log is served after the "
                "reveal (outcomes are secret until the game has made them public)"
            )
        return dice_pb2.ListLogRecordsResponse(
            records=[
                dice_pb2.LogRecord(leaf_index=i, record=data) for i, data in enumerate(game.leaves)
            ]
        )

    async def log_heads(self, game_id: str, tree_size: int) -> dice_pb2.GetLogHeadsResponse:
        game = await self.records(game_id)
        heads = game.heads
        if tree_size:
            heads = [h for h in heads if h.tree_size == tree_size]
            if not heads:
                raise NotFound(f"no signed head of size {tree_size} for game {game_id}")
        return dice_pb2.GetLogHeadsResponse(
            heads=heads, public_key=self.public_key, tree_size=len(game.leaves)
        )

    async def inclusion_proof(
        self, game_id: str, tree_size: int, leaf_index: int
    ) -> dice_pb2.GetLogInclusionProofResponse:
        tree = (await self.records(game_id)).tree()
        # The ledger's codes for the same questions: a missing size is the caller's mistake,
        # a size or leaf past the log is OUT_OF_RANGE (it may exist later).
        if tree_size == 0:
            raise InvalidArgument("tree_size is required (the size of a signed head you hold)")
        _within(tree_size, tree.size)
        if leaf_index >= tree_size:
            raise OutOfRange(f"leaf index {leaf_index} is not in the tree of size {tree_size}")
        try:
            path = tree.inclusion_proof(leaf_index, tree_size)
            leaf = tree.leaf_hash(leaf_index)
        except VerificationFailed as err:
            raise InvalidArgument(err.message) from None
        return dice_pb2.GetLogInclusionProofResponse(hashes=path, leaf_hash=leaf)

    async def consistency_proof(
        self, game_id: str, first: int, second: int
    ) -> dice_pb2.GetLogConsistencyProofResponse:
        tree = (await self.records(game_id)).tree()
        if not 0 < first <= second:
            raise InvalidArgument(f"need 0 < first_tree_size ≤ second, got {first}, {second}")
        _within(second, tree.size)
        try:
            proof = tree.consistency_proof(first, second)
        except VerificationFailed as err:
            raise InvalidArgument(err.message) from None
        return dice_pb2.GetLogConsistencyProofResponse(hashes=proof)


def _reveals(leaves: list[bytes]) -> Iterator[dice_pb2.DiceReveal]:
    """The reveal records among the raw log's leaves (unreadable ones are no reveal)."""
    for data in leaves:
        record = dice_pb2.DiceRecord()
        try:
            record.ParseFromString(data)
        except DecodeError:
            continue
        if record.HasField("revealed"):
            yield record.revealed


def _within(tree_size: int, records: int) -> None:
    if tree_size > records:
        raise OutOfRange(f"tree size {tree_size} is beyond the {records} records of the log")
