"""The dice wire ⇄ the fairness domain: outcome kinds, and a recorded outcome as the pure
verifier reads it. Shared by the dice service, its readers and the audits."""

from __future__ import annotations

from boulevard.api.v1 import dice_pb2
from boulevard.fairness import ROLL, SHUFFLE, RecordedOutcome

KIND_TO_PROTO = {ROLL: dice_pb2.OUTCOME_KIND_ROLL, SHUFFLE: dice_pb2.OUTCOME_KIND_SHUFFLE}
PROTO_TO_KIND = {v: k for k, v in KIND_TO_PROTO.items()}


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
