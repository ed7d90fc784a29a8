"""Rendezvous routing of game ids to engine replicas (boulevard.contract.routing)."""

from __future__ import annotations

from collections import Counter

import pytest

from boulevard.contract.routing import owner, ranked, replica_list, score

REPLICAS = ("engine-0", "engine-1", "engine-2")
GAMES = [f"game-{i}" for i in range(3000)]


def test_pinned_vectors_stay_the_same_across_releases() -> None:
    # Changing the score moves every game at once (a cold load each): these must not move.
    assert score("engine-0", "g-0") == 13674746965753843131
    assert score("engine-0", "game-1") == 2077211550209738407
    assert ranked("g-0", REPLICAS) == ("engine-0", "engine-1", "engine-2")
    assert ranked("game-1", REPLICAS) == ("engine-1", "engine-0", "engine-2")
    assert ranked("0123456789abcdef", REPLICAS) == ("engine-2", "engine-0", "engine-1")


def test_every_id_routes_to_a_member_and_the_order_is_a_permutation() -> None:
    for game_id in [*GAMES[:300], "", "é", "a" * 64]:
        order = ranked(game_id, REPLICAS)
        assert sorted(order) == sorted(REPLICAS)
        assert owner(game_id, REPLICAS) == order[0]


def test_the_input_order_and_duplicates_do_not_matter() -> None:
    for game_id in GAMES[:200]:
        assert ranked(game_id, REPLICAS) == ranked(game_id, REPLICAS[::-1] + REPLICAS)


def test_games_spread_over_the_replicas() -> None:
    counts = Counter(owner(g, REPLICAS) for g in GAMES)
    assert set(counts) == set(REPLICAS)
    for replica in REPLICAS:  # 1000 expected each; 5 sigma is about ±130
        assert 850 < counts[replica] < 1150, counts


def test_adding_a_replica_moves_only_the_games_it_takes() -> None:
    grown = (*REPLICAS, "engine-3")
    moved = [g for g in GAMES if owner(g, REPLICAS) != owner(g, grown)]
    assert all(owner(g, grown) == "engine-3" for g in moved)  # nothing moves between old ones
    assert 0.20 < len(moved) / len(GAMES) < 0.30  # about 1/4


def test_removing_a_replica_moves_only_its_games_to_their_next_choice() -> None:
    shrunk = ("engine-0", "engine-2")
    for g in GAMES:
        before = ranked(g, REPLICAS)
        if before[0] != "engine-1":
            assert owner(g, shrunk) == before[0]
        else:
            assert owner(g, shrunk) == before[1]


def test_one_replica_takes_every_game() -> None:
    assert {owner(g, ("127.0.0.1:50052",)) for g in GAMES[:100]} == {"127.0.0.1:50052"}


def test_no_replica_is_an_error() -> None:
    with pytest.raises(ValueError, match="no replicas"):
        ranked("g", ())


def test_the_name_and_the_game_id_cannot_run_into_each_other() -> None:
    # Length prefixes: ("ab", "c") and ("a", "bc") are different inputs.
    assert score("ab", "c") != score("a", "bc")


def test_replica_list_parses_the_setting() -> None:
    assert replica_list("127.0.0.1:50052") == ("127.0.0.1:50052",)
    assert replica_list(" a:1, b:2 ,,a:1, ") == ("a:1", "b:2")
    assert replica_list("") == ()
