"""Building blocks for Lords of Vegas tests: a board in a chosen position, played by hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from boulevard.games.base import BANK, Transfer, seat_account
from boulevard.games.lords_of_vegas import GAME
from boulevard.games.lords_of_vegas.board import LOT_INDEX, LOTS
from boulevard.games.lords_of_vegas.types import Colour, Phase, Space, State

BLUE, GREEN, RED, YELLOW = 0, 1, 2, 3


def tile(colour: Colour, owner: int | None, die: int = 0) -> Space:
    return Space(tile=colour, owner=owner, die=die)


def marker(seat: int) -> Space:
    return Space(marker=seat)


def position(
    spaces: Mapping[str, Space] | None = None,
    *,
    players: int = 4,
    current: int = 0,
    phase: Phase = Phase.PLAY,
    cash: tuple[int, ...] | None = None,
    points: tuple[int, ...] | None = None,
    deck: tuple[str, ...] = (),
    discards: tuple[str, ...] = (),
) -> State:
    """A mid-game state: the given lots, everything else empty."""
    board = [Space()] * len(LOTS)
    for lot_id, space in (spaces or {}).items():
        board[LOT_INDEX[lot_id]] = space
    return State(
        players=players,
        phase=phase,
        current=current,
        deck=deck,
        cards_left=len(deck),
        discards=discards,
        spaces=tuple(board),
        cash=cash if cash is not None else (50,) * players,
        points=points if points is not None else (0,) * players,
    )


def pay(seat: int, amount: int, reason: str) -> Transfer:
    return Transfer(seat_account(seat), BANK, amount, reason)


def paid(seat: int, amount: int, reason: str) -> Transfer:
    return Transfer(BANK, seat_account(seat), amount, reason)


def space(state: State, lot_id: str) -> Space:
    return state.spaces[LOT_INDEX[lot_id]]


def with_spaces(state: State, **spaces: Space) -> State:
    board = list(state.spaces)
    for lot_id, s in spaces.items():
        board[LOT_INDEX[lot_id]] = s
    return replace(state, spaces=tuple(board))


__all__ = ["BLUE", "GAME", "GREEN", "RED", "YELLOW"]
