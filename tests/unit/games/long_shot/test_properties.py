"""Properties over 1,000 random complete games, 3 to 8 players, random and heuristic bots:
money is the sum of transfers, the 104 cards are all somewhere, exactly three horses
finish, a finished horse never moves nor takes a bet, and the log replays exactly."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boulevard.games.base import BANK, ChanceResolved, GameConfig, seat_account, transfers_of
from boulevard.games.codec import Codec
from boulevard.games.long_shot import GAME
from boulevard.games.long_shot.data import DATA
from boulevard.games.long_shot.types import (
    ESCROW_BETS,
    BetPlaced,
    HorseFinished,
    HorseMoved,
    LongShotState,
    Phase,
    RaceEnded,
)
from boulevard.games.playout import Playout, playout

CODEC = Codec(GAME.event_types)
GAMES = 1000
CHUNKS = 8


def play(players: int, seed: int) -> Playout:
    rng = random.Random(seed)
    bots = {s: GAME.bots[rng.choice(["random", "heuristic"])] for s in range(players)}
    return playout(GAME, GameConfig(players), rng, bots)


def check_game(players: int, seed: int, codec_roundtrip: bool = False) -> None:
    played = play(players, seed)
    state: LongShotState = GAME.initial_state()
    balances: Counter[str] = Counter()
    finished: list[int] = []
    stakes = 0
    all_cards = list(range(len(DATA.cards)))
    for event in played.events:
        if codec_roundtrip:
            assert CODEC.loads(CODEC.dumps(event)) == event
        if isinstance(event, HorseMoved):
            assert event.horse not in finished, "a finished horse moved"
        if isinstance(event, BetPlaced):
            assert event.horse not in finished, "a bet on a finished horse"
            stakes += event.amount
        if isinstance(event, HorseFinished):
            finished.append(event.horse)
            assert event.place == len(finished)
        for t in transfers_of(event):
            assert t.amount > 0
            balances[t.source] -= t.amount
            balances[t.target] += t.amount
        state = GAME.evolve(state, event)
        if not state.players or not state.shuffled:
            continue
        # Money is exactly what the transfers moved, and never negative.
        assert state.money == tuple(balances[seat_account(s)] for s in range(players))
        assert min(state.money) >= 0
        if state.phase is not Phase.FINISHED:
            assert balances[ESCROW_BETS] == sum(b.amount for b in state.bets) == stakes
        # Every card is in the deck, a hand or the discard pile, once.
        cards = sorted([*state.deck, *state.discard, *(c for h in state.hands for c in h)])
        assert cards == all_cards
        assert state.finished == tuple(finished)
    assert state == played.state
    assert GAME.outcome(state).finished
    assert len(state.finished) == 3 and isinstance(played.events[-1], RaceEnded)
    assert all(p >= DATA.track_length for p in (state.positions[h - 1] for h in state.finished))
    assert balances[ESCROW_BETS] == 0 and state.hands == ((),) * players
    assert sum(balances.values()) == 0 and balances[BANK] == -sum(state.money)
    # Replay exact: the same log folds to the same state.
    replayed = GAME.initial_state()
    for event in played.events:
        replayed = GAME.evolve(replayed, event)
    assert replayed == state
    # Chance requests were answered in kind: a steal always had a card to take.
    for event in played.events:
        if isinstance(event, ChanceResolved):
            assert all(1 <= v <= event.sides for v in event.values) or event.kind == "shuffle"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_a_thousand_random_games_keep_every_invariant(chunk: int) -> None:
    per_chunk = GAMES // CHUNKS
    for seed in range(chunk * per_chunk, (chunk + 1) * per_chunk):
        players = DATA.min_players + seed % (DATA.max_players - DATA.min_players + 1)
        check_game(players, seed, codec_roundtrip=seed % 50 == 0)


@settings(max_examples=25, deadline=None)
@given(
    players=st.integers(DATA.min_players, DATA.max_players),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_table_any_seed(players: int, seed: int) -> None:
    check_game(players, seed, codec_roundtrip=True)
