"""Protobuf at the dice service's edge: kinds, recorded outcomes, verification results.

The wire↔domain conversions the public client also needs live in `boulevard.contract.dice`
(one definition); this module adds what only the service uses.
"""

from __future__ import annotations

from boulevard.api.v1 import dice_pb2
from boulevard.contract.dice import KIND_TO_PROTO, PROTO_TO_KIND, kind_name, to_recorded
from boulevard.fairness import Mismatch, VerificationReport

__all__ = [
    "KIND_TO_PROTO",
    "PROTO_TO_KIND",
    "kind_name",
    "to_recorded",
    "verification_response",
]


def mismatch_message(mismatch: Mismatch) -> dice_pb2.VerificationMismatch:
    message = dice_pb2.VerificationMismatch(
        code=mismatch.code,
        message=mismatch.message,
        expected=list(mismatch.expected or ()),
        recorded=list(mismatch.recorded or ()),
    )
    if mismatch.nonce is not None:
        message.nonce = mismatch.nonce
    return message


def verification_response(report: VerificationReport) -> dice_pb2.VerifyGameResponse:
    response = dice_pb2.VerifyGameResponse(
        ok=report.ok, checked=report.checked, summary=report.describe()
    )
    if report.mismatch is not None:
        response.mismatch.CopyFrom(mismatch_message(report.mismatch))
    return response
