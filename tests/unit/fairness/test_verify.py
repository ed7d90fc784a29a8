"""The verifier passes an honest game and names the nonce of the first thing that is wrong."""

from __future__ import annotations

import dataclasses

import pytest

from boulevard.fairness import (
    GameSeeds,
    InvalidInput,
    RecordedOutcome,
    VerificationReport,
    check_used,
    commitment,
    verify_game,
)

SEED = bytes.fromhex("9f" * 32)
CLIENT_SEEDS = ["ann", "ben", "cat"]
GAME = "g-verify"
REQUESTS = [("roll", 2, 6), ("shuffle", 49, 0), ("roll", 1, 10), ("roll", 3, 6), ("roll", 1, 6)]


def honest() -> list[RecordedOutcome]:
    seeds = GameSeeds.of(SEED, CLIENT_SEEDS, GAME)
    return [
        RecordedOutcome(n, kind, count, sides, seeds.derive(n, kind, count, sides))
        for n, (kind, count, sides) in enumerate(REQUESTS)
    ]


def verify(
    outcomes: list[RecordedOutcome], reveal: bytes = SEED, expected_count: int | None = None
) -> VerificationReport:
    return verify_game(
        commitment=commitment(SEED),
        revealed_seed_hex=reveal.hex(),
        client_seeds=CLIENT_SEEDS,
        game_id=GAME,
        outcomes=outcomes,
        expected_count=expected_count,
    )


def test_an_honest_game_passes() -> None:
    report = verify(honest(), expected_count=len(REQUESTS))
    assert report.ok and report.checked == len(REQUESTS)
    assert report.describe().startswith("PASS: 5 outcomes")


def test_a_tampered_value_is_caught_with_its_nonce() -> None:
    outcomes = honest()
    roll = outcomes[3]
    tampered = tuple(6 if v != 6 else 5 for v in roll.values)
    outcomes[3] = dataclasses.replace(roll, values=tampered)
    report = verify(outcomes)
    assert not report.ok and report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("values_mismatch", 3)
    assert report.mismatch.expected == roll.values and report.mismatch.recorded == tampered
    assert "nonce 3" in report.describe()


def test_a_swapped_shuffle_is_caught() -> None:
    outcomes = honest()
    deck = list(outcomes[1].values)
    deck[0], deck[1] = deck[1], deck[0]
    outcomes[1] = dataclasses.replace(outcomes[1], values=tuple(deck))
    report = verify(outcomes)
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("values_mismatch", 1)


def test_a_skipped_nonce_is_named() -> None:
    outcomes = honest()
    del outcomes[2]
    report = verify(outcomes)
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("nonce_skipped", 2)
    assert "nonce 2 is missing" in report.describe()


def test_a_duplicated_nonce_is_named() -> None:
    outcomes = honest()
    outcomes.insert(3, outcomes[2])
    report = verify(outcomes)
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("nonce_duplicated", 2)


def test_a_reroll_under_the_same_nonce_is_caught() -> None:
    # Re-rolling until a result suits would need a second outcome for one nonce.
    outcomes = honest()
    outcomes.insert(1, dataclasses.replace(outcomes[0], values=(6, 6)))
    report = verify(outcomes)
    assert report.mismatch is not None and report.mismatch.nonce == 0


def test_a_missing_first_nonce_is_named() -> None:
    report = verify(honest()[1:])
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("nonce_skipped", 0)


def test_outcomes_dropped_at_the_end_are_caught_against_the_reveal_count() -> None:
    report = verify(honest()[:3], expected_count=len(REQUESTS))
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("nonce_missing_at_end", 3)


def test_a_wrong_reveal_is_caught() -> None:
    report = verify(honest(), reveal=bytes.fromhex("9e" + "9f" * 31))
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("reveal_mismatch", None)
    assert report.describe().startswith("FAIL at reveal")


def test_a_malformed_reveal_is_a_mismatch_not_a_crash() -> None:
    report = verify_game(
        commitment=commitment(SEED),
        revealed_seed_hex="not hex",
        client_seeds=CLIENT_SEEDS,
        game_id=GAME,
        outcomes=honest(),
    )
    assert report.mismatch is not None and report.mismatch.code == "reveal_mismatch"


def test_different_client_seeds_change_everything() -> None:
    report = verify_game(
        commitment=commitment(SEED),
        revealed_seed_hex=SEED.hex(),
        client_seeds=[*CLIENT_SEEDS, "eve"],
        game_id=GAME,
        outcomes=honest(),
    )
    assert report.mismatch is not None and report.mismatch.nonce == 0


def test_an_impossible_outcome_is_reported() -> None:
    outcomes = honest()
    outcomes[0] = dataclasses.replace(outcomes[0], sides=0)
    report = verify(outcomes)
    assert report.mismatch is not None
    assert (report.mismatch.code, report.mismatch.nonce) == ("invalid_outcome", 0)


def test_check_used() -> None:
    outcomes = honest()
    assert check_used(outcomes, {0: outcomes[0].values, 3: outcomes[3].values}) is None
    wrong = check_used(outcomes, {3: (1, 1, 1)})
    assert wrong is not None and (wrong.code, wrong.nonce) == ("values_mismatch", 3)
    unknown = check_used(outcomes, {9: (1,)})
    assert unknown is not None and (unknown.code, unknown.nonce) == ("not_recorded", 9)


@pytest.mark.parametrize(
    ("kind", "count", "sides"),
    [("roll", 0, 6), ("roll", 1, 0), ("roll", 10_001, 6), ("shuffle", -1, 0), ("deal", 1, 6)],
)
def test_requests_the_scheme_does_not_define_are_refused(kind: str, count: int, sides: int) -> None:
    with pytest.raises(InvalidInput):
        GameSeeds.of(SEED, CLIENT_SEEDS, GAME).derive(0, kind, count, sides)


@pytest.mark.parametrize("game_id", ["", "x" * 257])
def test_bad_game_ids_are_refused(game_id: str) -> None:
    with pytest.raises(InvalidInput):
        GameSeeds.of(SEED, CLIENT_SEEDS, game_id)


def test_bad_seeds_and_nonces_are_refused() -> None:
    with pytest.raises(InvalidInput):
        GameSeeds.of(SEED[:31], CLIENT_SEEDS, GAME)
    with pytest.raises(InvalidInput):
        GameSeeds.of(SEED, CLIENT_SEEDS, GAME).roll(-1, 1, 6)


def test_a_game_under_another_scheme_is_refused_not_misverified() -> None:
    report = verify_game(
        commitment=commitment(SEED),
        revealed_seed_hex=SEED.hex(),
        client_seeds=CLIENT_SEEDS,
        game_id=GAME,
        outcomes=honest(),
        scheme="boulevard-fairness-v2",
    )
    assert report.mismatch is not None and report.mismatch.code == "unknown_scheme"
