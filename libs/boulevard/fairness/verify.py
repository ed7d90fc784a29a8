"""The auditor's verifier: re-derive every recorded outcome of a game from the revealed seed
and report the first one that does not match (with its nonce), so that nobody has to trust
the operator. Pure, like the rest of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from boulevard.fairness.scheme import (
    SCHEME_VERSION,
    FairnessError,
    GameSeeds,
    check_request,
    parse_server_seed,
    seed_matches_commitment,
)


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """One outcome as the dice service recorded it (and as the game used it)."""

    nonce: int
    kind: str  # "roll" or "shuffle"
    count: int
    sides: int  # ignored for a shuffle
    values: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why verification failed. `nonce` names the outcome at fault (None for the reveal
    itself). Codes: unknown_scheme, reveal_mismatch, nonce_skipped, nonce_duplicated,
    nonce_missing_at_end, invalid_outcome, values_mismatch, not_recorded."""

    code: str
    nonce: int | None
    message: str
    expected: tuple[int, ...] | None = None
    recorded: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """`ok` when the reveal matches the commitment and all `checked` outcomes re-derive."""

    checked: int
    mismatch: Mismatch | None = None

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    def describe(self) -> str:
        """One line for a person: a pass with the count, or the first mismatch."""
        if self.mismatch is None:
            return f"PASS: {self.checked} outcomes re-derived from the revealed seed"
        where = "reveal" if self.mismatch.nonce is None else f"nonce {self.mismatch.nonce}"
        text = f"FAIL at {where} ({self.mismatch.code}): {self.mismatch.message}"
        if self.mismatch.expected is not None or self.mismatch.recorded is not None:
            text += f"; expected {_short(self.mismatch.expected)}"
            text += f", recorded {_short(self.mismatch.recorded)}"
        return text


def verify_game(
    *,
    commitment: str,
    revealed_seed_hex: str,
    client_seeds: Iterable[str],
    game_id: str,
    outcomes: Iterable[RecordedOutcome],
    expected_count: int | None = None,
    scheme: str = SCHEME_VERSION,
) -> VerificationReport:
    """Check a finished game's outcomes, in the order they were recorded:

    1. SHA-256 of the revealed seed equals the commitment published before the game;
    2. nonces run 0, 1, 2, … with no gap and no repeat (and, when the reveal states how many
       outcomes were issued, `expected_count`, none is missing at the end);
    3. each outcome's values equal the ones re-derived from the seeds and its nonce.

    Stops at the first failure and names its nonce. A game recorded under another scheme
    (`scheme`, as its commitment record names it) is refused rather than mis-verified.
    """
    if scheme != SCHEME_VERSION:
        return VerificationReport(
            0,
            Mismatch(
                "unknown_scheme",
                None,
                f"the game was recorded under scheme {scheme!r}; this verifier knows "
                f"{SCHEME_VERSION!r}",
            ),
        )
    if not seed_matches_commitment(revealed_seed_hex, commitment):
        return VerificationReport(
            0,
            Mismatch(
                "reveal_mismatch",
                None,
                f"SHA-256 of the revealed seed is not the commitment {commitment}",
            ),
        )
    seeds = GameSeeds.of(parse_server_seed(revealed_seed_hex), client_seeds, game_id)
    next_nonce = 0
    for outcome in outcomes:
        if outcome.nonce > next_nonce:
            return _fail(
                next_nonce,
                "nonce_skipped",
                f"nonce {next_nonce} is missing: the next recorded outcome has nonce "
                f"{outcome.nonce}",
            )
        if outcome.nonce < next_nonce:
            return _fail(
                outcome.nonce,
                "nonce_duplicated",
                f"nonce {outcome.nonce} is recorded again after nonce {next_nonce - 1}",
            )
        mismatch = check_outcome(seeds, outcome)
        if mismatch is not None:
            return VerificationReport(next_nonce, mismatch)
        next_nonce += 1
    if expected_count is not None and next_nonce < expected_count:
        return _fail(
            next_nonce,
            "nonce_missing_at_end",
            f"the reveal says {expected_count} outcomes were issued but only {next_nonce} "
            "are recorded",
        )
    return VerificationReport(next_nonce)


def check_outcome(seeds: GameSeeds, outcome: RecordedOutcome) -> Mismatch | None:
    """Re-derive one outcome; None when it matches."""
    try:
        check_request(outcome.kind, outcome.count, outcome.sides)
        expected = seeds.derive(outcome.nonce, outcome.kind, outcome.count, outcome.sides)
    except FairnessError as e:
        return Mismatch("invalid_outcome", outcome.nonce, str(e), None, outcome.values)
    if expected != tuple(outcome.values):
        what = (
            f"{outcome.count}d{outcome.sides}"
            if outcome.kind == "roll"
            else f"shuffle of {outcome.count}"
        )
        return Mismatch(
            "values_mismatch",
            outcome.nonce,
            f"{what} does not re-derive from the revealed seed",
            expected,
            tuple(outcome.values),
        )
    return None


def check_used(
    recorded: Sequence[RecordedOutcome], used: Mapping[int, Sequence[int]]
) -> Mismatch | None:
    """Whether a game used only recorded outcomes, unchanged: `used` maps each nonce the
    game's log cites (ChanceResolved.nonce) to the values it applied."""
    by_nonce = {o.nonce: o for o in recorded}
    for nonce in sorted(used):
        values = tuple(used[nonce])
        outcome = by_nonce.get(nonce)
        if outcome is None:
            return Mismatch(
                "not_recorded", nonce, "the game used an outcome the dice service never issued"
            )
        if outcome.values != values:
            return Mismatch(
                "values_mismatch",
                nonce,
                "the game used values other than the recorded outcome",
                outcome.values,
                values,
            )
    return None


def _fail(nonce: int, code: str, message: str) -> VerificationReport:
    return VerificationReport(nonce, Mismatch(code, nonce, message))


def _short(values: tuple[int, ...] | None) -> str:
    if values is None:
        return "nothing"
    if len(values) <= 16:
        return str(list(values))
    return f"[{', '.join(map(str, values[:16]))}, … ({len(values)} values)]"
