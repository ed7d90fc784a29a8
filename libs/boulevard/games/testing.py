"""Given/when/then specs for game rules: three lines per rule (see STYLE.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from boulevard.games.base import GameDefinition, RulesError


class Spec:
    def __init__(self, game: GameDefinition[Any, Any, Any, Any]) -> None:
        self.game = game
        self.state = game.initial_state()

    def given(self, *events: Any) -> Spec:
        for ev in events:
            self.state = self.game.evolve(self.state, ev)
        return self

    def given_state(self, state: Any) -> Spec:
        self.state = state
        return self

    def when(self, command: Any) -> _When:
        return _When(self, command)


class _When:
    def __init__(self, spec: Spec, command: Any) -> None:
        self.spec = spec
        self.command = command

    def events(self) -> Sequence[Any]:
        return self.spec.game.decide(self.command, self.spec.state)

    def then(self, *expected: Any) -> Any:
        """Assert the events, and return the state after them."""
        got = tuple(self.events())
        assert got == expected, f"\nexpected {expected}\n     got {got}"
        state = self.spec.state
        for ev in got:
            state = self.spec.game.evolve(state, ev)
        return state

    def then_raises(self, code: str) -> RulesError:
        try:
            got = self.events()
        except RulesError as err:
            assert err.code == code, f"expected code {code!r}, got {err.code!r}: {err.message}"
            return err
        raise AssertionError(f"expected RulesError {code!r}, got events {got}")


def spec(game: GameDefinition[Any, Any, Any, Any]) -> Spec:
    return Spec(game)
