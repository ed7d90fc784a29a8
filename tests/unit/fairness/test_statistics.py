"""Goodness of fit of dice and shuffles (chi-square, fixed seeds, fixed critical values).

The critical values are the chi-square quantiles at significance 0.001, taken from standard
tables; the seeds are fixed, so these tests are deterministic and never flaky.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

from boulevard.fairness import GameSeeds

CRITICAL_0_001 = {5: 20.515, 9: 27.877, 48: 85.351}


def chi_square(observed: Sequence[int], expected_each: float) -> float:
    return sum((o - expected_each) ** 2 / expected_each for o in observed)


def seeds(label: str) -> GameSeeds:
    return GameSeeds.of(hashlib.sha256(label.encode()).digest(), ["p1", "p2"], f"stats-{label}")


def test_600k_d6_rolls_fit_uniform() -> None:
    game = seeds("d6")
    counts: Counter[int] = Counter()
    for nonce in range(100_000):  # 100,000 outcomes of six dice
        counts.update(game.roll(nonce, 6, 6))
    assert sum(counts.values()) == 600_000
    assert sorted(counts) == [1, 2, 3, 4, 5, 6]
    statistic = chi_square([counts[face] for face in range(1, 7)], 100_000)
    assert statistic < CRITICAL_0_001[5], (statistic, counts)


def test_d10_rolls_fit_uniform() -> None:
    game = seeds("d10")
    counts: Counter[int] = Counter()
    for nonce in range(10_000):
        counts.update(game.roll(nonce, 10, 10))
    statistic = chi_square([counts[face] for face in range(1, 11)], 10_000)
    assert statistic < CRITICAL_0_001[9], (statistic, counts)


def test_49_card_shuffles_are_permutations_with_uniform_first_cards() -> None:
    game = seeds("shuffle49")
    shuffles = 20_000
    position_of_card_0: Counter[int] = Counter()
    card_on_top: Counter[int] = Counter()
    for nonce in range(shuffles):
        deck = game.shuffle(nonce, 49)
        assert sorted(deck) == list(range(49))
        position_of_card_0[deck.index(0)] += 1
        card_on_top[deck[0]] += 1
    expected = shuffles / 49
    for counts in (position_of_card_0, card_on_top):
        statistic = chi_square([counts[i] for i in range(49)], expected)
        assert statistic < CRITICAL_0_001[48], (statistic, counts)


def test_a_statistic_this_test_would_reject() -> None:
    # The check has teeth: `% 5 + 1` (a die that never rolls 6) fails it at once.
    biased = Counter((raw % 5) + 1 for raw in range(600_000))
    assert chi_square([biased[face] for face in range(1, 7)], 100_000) > CRITICAL_0_001[5]
