"""Provably-fair randomness: commitments, the HMAC-SHA256 derivation, unbiased dice,
Fisher–Yates shuffles and the auditor's verifier. Specified in docs/fairness.md.

Pure: no I/O, no clock, no global random (the dice service draws server seeds from
`secrets` and passes them in).
"""

from boulevard.fairness.scheme import (
    DRAW_BYTES,
    KINDS,
    MAX_ROLL_COUNT,
    MAX_SHUFFLE_COUNT,
    MAX_SIDES,
    ROLL,
    SCHEME_VERSION,
    SEED_BYTES,
    SHUFFLE,
    FairnessError,
    GameSeeds,
    InvalidInput,
    OutcomeStream,
    block_bytes,
    block_message,
    check_request,
    combine_client_seeds,
    commitment,
    parse_server_seed,
    seed_matches_commitment,
    uniform_from_raw,
)
from boulevard.fairness.verify import (
    Mismatch,
    RecordedOutcome,
    VerificationReport,
    check_outcome,
    check_used,
    verify_game,
)

__all__ = [
    "DRAW_BYTES",
    "KINDS",
    "MAX_ROLL_COUNT",
    "MAX_SHUFFLE_COUNT",
    "MAX_SIDES",
    "ROLL",
    "SCHEME_VERSION",
    "SEED_BYTES",
    "SHUFFLE",
    "FairnessError",
    "GameSeeds",
    "InvalidInput",
    "Mismatch",
    "OutcomeStream",
    "RecordedOutcome",
    "VerificationReport",
    "block_bytes",
    "block_message",
    "check_outcome",
    "check_request",
    "check_used",
    "combine_client_seeds",
    "commitment",
    "parse_server_seed",
    "seed_matches_commitment",
    "uniform_from_raw",
    "verify_game",
]
