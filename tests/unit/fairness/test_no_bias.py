"""No modulo bias: over a full cycle of raw values every face is reached equally often."""

from __future__ import annotations

from collections import Counter

import pytest

from boulevard.fairness import MAX_SIDES, InvalidInput, uniform_from_raw


@pytest.mark.parametrize("raw_bits", [8, 16])
@pytest.mark.parametrize("n", [6, 10, 7, 49, 52, 255])
def test_full_cycle_of_raw_values_gives_exactly_equal_counts(raw_bits: int, n: int) -> None:
    counts = Counter(uniform_from_raw(raw, n, raw_bits) for raw in range(1 << raw_bits))
    rejected = counts.pop(None, 0)
    assert sorted(counts) == list(range(n))
    assert len(set(counts.values())) == 1, counts  # every face exactly as often
    assert rejected == (1 << raw_bits) % n  # and no more is thrown away than necessary


def test_d6_over_a_byte_in_numbers() -> None:
    # 256 = 6 * 42 + 4: the 4 top raw values are rejected, each face gets 42.
    counts = Counter(uniform_from_raw(raw, 6, 8) for raw in range(256))
    assert counts == {**dict.fromkeys(range(6), 42), None: 4}
    counts10 = Counter(uniform_from_raw(raw, 10, 8) for raw in range(256))
    assert counts10 == {**dict.fromkeys(range(10), 25), None: 6}


@pytest.mark.parametrize("n", [6, 10, 3_000_000_000])
def test_the_32_bit_draw_rejects_exactly_the_incomplete_last_cycle(n: int) -> None:
    # The service's 32-bit draw: the same function, so the exhaustive checks above apply;
    # here the boundary itself. limit is the largest multiple of n not above 2**32.
    limit = MAX_SIDES - MAX_SIDES % n
    assert limit % n == 0
    assert uniform_from_raw(limit - 1, n) == n - 1  # last accepted value completes a cycle
    assert all(uniform_from_raw(raw, n) is None for raw in range(limit, min(limit + 64, MAX_SIDES)))
    assert uniform_from_raw(MAX_SIDES - 1, n) is None
    window = Counter(uniform_from_raw(raw, n) for raw in range(limit - 6 * min(n, 10), limit))
    if n <= 10:
        assert len(set(window.values())) == 1 and len(window) == n


def test_powers_of_two_are_never_rejected() -> None:
    assert all(uniform_from_raw(raw, 8, 8) is not None for raw in range(256))
    assert uniform_from_raw(MAX_SIDES - 1, MAX_SIDES) == MAX_SIDES - 1


@pytest.mark.parametrize("n", [0, -1, MAX_SIDES + 1])
def test_n_out_of_range_is_refused(n: int) -> None:
    with pytest.raises(InvalidInput):
        uniform_from_raw(0, n)
