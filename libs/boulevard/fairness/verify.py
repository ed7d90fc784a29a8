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
    client_seed_commitment,
    parse_server_seed,
    seed_matches_commitment,
)


@dataclass(frozen=True, slots=True)
class RecordedOutcome:
    """One outcome as the dice service recorded it (and as the game used it)."""

    nonce: int
    kind: str  # "roll" or "shuffle"
    count: int
    sides: int  # 0 for a shuffle
    values: tuple[int, ...]
    purpose: str = ""  # the game's label for the request ("deck", "start_player", …)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """Why verification failed. `nonce` names the outcome at fault (None for the reveal
    itself). Codes: unknown_scheme, reveal_mismatch, seed_commitment_mismatch, nonce_skipped,
    nonce_duplicated, nonce_missing_at_end, invalid_outcome, values_mismatch, not_recorded,
    outcome_unused, outcome_cited_twice, cited_out_of_order, request_mismatch."""

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
    # What passed but an auditor should know: e.g. a seat that did not reveal its client
    # seed by the deadline and so played with an empty one.
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.mismatch is None

    def describe(self) -> str:
        """One line for a person: a pass with the count, or the first mismatch."""
        if self.mismatch is None:
            text = f"PASS: {self.checked} outcomes re-derived from the revealed seed"
            return "; ".join((text, *(f"note: {n}" for n in self.notes)))
        if self.mismatch.nonce is not None:
            where = f" at nonce {self.mismatch.nonce}"
        else:
            where = " at reveal" if self.mismatch.code == "reveal_mismatch" else ""
        text = f"FAIL{where} ({self.mismatch.code}): {self.mismatch.message}"
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
    client_seed_commitments: Sequence[str] | None = None,
    missing_seats: Iterable[int] = (),
) -> VerificationReport:
    """Check a finished game's outcomes, in the order they were recorded:

    1. SHA-256 of the revealed seed equals the commitment published before the game;
    2. nonces run 0, 1, 2, … with no gap and no repeat (and, when the reveal states how many
       outcomes were issued, `expected_count`, none is missing at the end);
    3. each outcome's values equal the ones re-derived from the seeds and its nonce.

    Stops at the first failure and names its nonce. A game recorded under another scheme
    (`scheme`, as its commitment record names it) is refused rather than mis-verified.

    With `client_seed_commitments` (per seat, from the commitment record), `client_seeds`
    is per seat too and each must be the seed its seat committed to (see
    `check_client_seeds`); seats in `missing_seats` played with an empty seed, which the
    report notes.
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
    client_seeds = list(client_seeds)
    notes: tuple[str, ...] = ()
    if client_seed_commitments is not None:
        seed_check = check_client_seeds(client_seed_commitments, client_seeds, missing_seats)
        if isinstance(seed_check, Mismatch):
            return VerificationReport(0, seed_check)
        notes = seed_check
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
    return VerificationReport(next_nonce, notes=notes)


def check_client_seeds(
    commitments: Sequence[str], client_seeds: Sequence[str], missing_seats: Iterable[int] = ()
) -> Mismatch | tuple[str, ...]:
    """The opening's rule: seat i's client seed hashes to seat i's commitment, except that a
    seat listed as missing (it did not reveal by the deadline) has the empty seed. Returns the
    first broken rule, or notes for the report (missing seats, seats that committed to no
    seed)."""
    missing = set(missing_seats)
    if len(commitments) != len(client_seeds):
        return Mismatch(
            "seed_commitment_mismatch",
            None,
            f"{len(commitments)} seats committed but {len(client_seeds)} client seeds are given",
        )
    notes: list[str] = []
    for seat, (committed, seed) in enumerate(zip(commitments, client_seeds, strict=True)):
        if seat in missing:
            if seed:
                return Mismatch(
                    "seed_commitment_mismatch",
                    None,
                    f"seat {seat} is recorded as missing its reveal but has a seed",
                )
            notes.append(
                f"seat {seat} did not reveal its client seed by the deadline and played with "
                "an empty seed"
            )
        elif not committed:
            if seed:
                return Mismatch(
                    "seed_commitment_mismatch", None, f"seat {seat} committed to no seed"
                )
            notes.append(f"seat {seat} committed to no client seed")
        elif client_seed_commitment(seed) != committed.lower():
            return Mismatch(
                "seed_commitment_mismatch",
                None,
                f"seat {seat}'s client seed is not the one it committed to ({committed})",
            )
    extra = sorted(s for s in missing if not 0 <= s < len(commitments))
    if extra:
        return Mismatch("seed_commitment_mismatch", None, f"no seat {extra[0]} in this game")
    return tuple(notes)


def check_accounted(
    recorded: Sequence[RecordedOutcome], cited: Sequence[RecordedOutcome]
) -> Mismatch | None:
    """Every outcome accounted for: `cited` are the outcomes the game's log cites (its
    ChanceResolved events, in log order). Each recorded outcome must be cited exactly once,
    in nonce order, with the kind, count, sides and purpose it was drawn for and the values
    it has; nothing may be cited that was not recorded. A burned outcome (drawn, never used:
    someone re-rolled) is `outcome_unused` at its nonce."""
    by_nonce = {o.nonce: o for o in recorded}
    cited_nonces = {c.nonce for c in cited}
    seen: set[int] = set()
    for expected, c in enumerate(cited):
        if c.nonce in seen:
            return Mismatch("outcome_cited_twice", c.nonce, "the game used this outcome twice")
        outcome = by_nonce.get(c.nonce)
        if outcome is None:
            return Mismatch(
                "not_recorded", c.nonce, "the game used an outcome the dice service never issued"
            )
        if c.nonce != expected:
            if expected in by_nonce and expected not in cited_nonces:
                return _unused(by_nonce[expected])
            return Mismatch(
                "cited_out_of_order",
                c.nonce,
                f"the game used nonce {c.nonce} where nonce {expected} was next",
            )
        asked = (c.kind, c.count, c.sides, c.purpose)
        drawn = (outcome.kind, outcome.count, outcome.sides, outcome.purpose)
        if asked != drawn:
            return Mismatch(
                "request_mismatch",
                c.nonce,
                f"the game used it as {_request(*asked)} but it was drawn as {_request(*drawn)}",
            )
        if tuple(c.values) != outcome.values:
            return Mismatch(
                "values_mismatch",
                c.nonce,
                "the game used values other than the recorded outcome",
                outcome.values,
                tuple(c.values),
            )
        seen.add(c.nonce)
    for nonce in sorted(by_nonce):
        if nonce not in seen:
            return _unused(by_nonce[nonce])
    return None


def _unused(outcome: RecordedOutcome) -> Mismatch:
    return Mismatch(
        "outcome_unused",
        outcome.nonce,
        f"{_request(outcome.kind, outcome.count, outcome.sides, outcome.purpose)} was drawn "
        "but the game never used it (a burned or re-rolled outcome)",
    )


def _request(kind: str, count: int, sides: int, purpose: str) -> str:
    what = f"{count}d{sides}" if kind == "roll" else f"a {kind} of {count} (sides {sides})"
    return f"{what} for {purpose!r}"


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
