"""Ratings: openskill Plackett-Luce, rank-based, ties shared."""

from __future__ import annotations

import pytest

from services.matchmaking.ratings import Skill, ranks_of, rate


def test_winner_moves_up_and_loser_down() -> None:
    loser, winner = rate([Skill(), Skill()], ((1,), (0,)))
    assert loser.mu < 25 < winner.mu
    assert winner.sigma < Skill().sigma


def test_multiplayer_places_order_the_moves() -> None:
    after = rate([Skill()] * 4, ((2,), (0,), (3,), (1,)))
    assert after[2].mu > after[0].mu > after[3].mu > after[1].mu


def test_tied_seats_move_alike() -> None:
    a, b, c = rate([Skill()] * 3, ((0, 1), (2,)))
    assert a.mu == pytest.approx(b.mu) and c.mu < a.mu


def test_beating_a_stronger_player_gains_more() -> None:
    vs_equal = rate([Skill(), Skill()], ((0,), (1,)))[0].mu
    vs_strong = rate([Skill(), Skill(mu=35, sigma=4)], ((0,), (1,)))[0].mu
    assert vs_strong > vs_equal


def test_a_ranking_must_place_every_seat_once() -> None:
    with pytest.raises(ValueError):
        ranks_of(((0,),), 2)
    with pytest.raises(ValueError):
        ranks_of(((0,), (5,)), 2)
    assert ranks_of(((1,), (0, 2)), 3) == [2, 1, 2]
