"""Builders for Long Shot tests: a table in a chosen situation, and cards by kind."""

from __future__ import annotations

from dataclasses import replace

from boulevard.games.base import ChanceKind, ChanceResolved, GameConfig
from boulevard.games.long_shot import GAME
from boulevard.games.long_shot.data import DATA
from boulevard.games.long_shot.types import (
    ROLL_HORSE,
    ROLL_MOVE,
    ROLL_START,
    ROLL_STEAL,
    SHUFFLE_DECK,
    LongShotState,
    Phase,
)

HORSES = {h.name: h.number for h in DATA.horses}


def card_of(key: str, nth: int = 0) -> int:
    """The id of the nth card of the type named `key` in the data file."""
    ids = [c for c in range(len(DATA.cards)) if DATA.card(c).key == key]
    return ids[nth]


def shuffled(players: int, deck: tuple[int, ...] | None = None) -> LongShotState:
    """After setup: the deck in `deck` order (ids 0..103 by default), three cards dealt."""
    state = GAME.initial_state()
    for event in GAME.new_game(GameConfig(players)):
        state = GAME.evolve(state, event)
    order = deck if deck is not None else tuple(range(len(DATA.cards)))
    return GAME.evolve(state, ChanceResolved(SHUFFLE_DECK, ChanceKind.SHUFFLE, order))


def start(rolls: tuple[int, ...]) -> ChanceResolved:
    return ChanceResolved(ROLL_START, ChanceKind.ROLL, rolls, sides=10)


def horse_roll(value: int) -> ChanceResolved:
    return ChanceResolved(ROLL_HORSE, ChanceKind.ROLL, (value,), sides=10)


def move_roll(face: int) -> ChanceResolved:
    """The move die roll showing `face` (the first die value with that face)."""
    return ChanceResolved(ROLL_MOVE, ChanceKind.ROLL, (DATA.move_faces.index(face) + 1,), sides=6)


def steal_roll(value: int, sides: int) -> ChanceResolved:
    return ChanceResolved(ROLL_STEAL, ChanceKind.ROLL, (value,), sides=sides)


def table(
    players: int = 4,
    current: int = 0,
    *,
    hands: dict[int, tuple[int, ...]] | None = None,
    owners: dict[int, int] | None = None,
    positions: dict[int, int] | None = None,
    money: dict[int, int] | None = None,
    phase: Phase = Phase.ROLLING,
) -> LongShotState:
    """A started table with seat `current` to roll, edited into the situation wanted.
    Hands replace the dealt ones (cards given leave the deck)."""
    state = shuffled(players)
    state = replace(state, phase=phase, current=current, turn=1, contenders=())
    if hands:
        given = {c for cards in hands.values() for c in cards}
        dealt_back = [c for s, h in enumerate(state.hands) if s in hands for c in h]
        state = replace(
            state,
            hands=tuple(
                hands[s] if s in hands else tuple(c for c in h if c not in given)
                for s, h in enumerate(state.hands)
            ),
            deck=tuple(c for c in (*state.deck, *dealt_back) if c not in given),
        )
    if owners:
        state = replace(
            state,
            owners=tuple(owners.get(h, -1) for h in range(1, len(DATA.horses) + 1)),
        )
    if positions:
        state = replace(
            state,
            positions=tuple(positions.get(h, 0) for h in range(1, len(DATA.horses) + 1)),
        )
    if money:
        state = replace(state, money=tuple(money.get(s, m) for s, m in enumerate(state.money)))
    return state


def rolled(state: LongShotState, horse: int, face: int) -> LongShotState:
    """The current seat has rolled `horse` on the horse die and `face` on the move die."""
    state = GAME.evolve(state, horse_roll(horse))
    return GAME.evolve(state, move_roll(face))


def acting(state: LongShotState, horse: int = 10, face: int = 1) -> LongShotState:
    """The current seat's roll resolved (by default horse 10 moved 1): its action is next."""
    from boulevard.games.long_shot.types import MoveHorses

    state = rolled(state, horse, face)
    for event in GAME.decide(MoveHorses(state.current, ()), state):
        state = GAME.evolve(state, event)
    return state


def apply(state: LongShotState, *events: object) -> LongShotState:
    for event in events:
        state = GAME.evolve(state, event)
    return state
