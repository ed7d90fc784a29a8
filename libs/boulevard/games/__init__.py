"""The games Boulevard hosts. The engine knows games only through `REGISTRY`.

Each entry is added explicitly here (no registration by import side effect).
"""

from __future__ import annotations

from typing import Any

from boulevard.games.base import GameDefinition

REGISTRY: dict[str, GameDefinition[Any, Any, Any, Any]] = {}


def _register() -> None:
    # Imported here, not at module top, so `boulevard.games.base` stays importable alone.
    from boulevard.games.las_vegas import GAME as LAS_VEGAS
    from boulevard.games.long_shot import GAME as LONG_SHOT
    from boulevard.games.lords_of_vegas import GAME as LORDS_OF_VEGAS
    from boulevard.games.vegas_showdown import GAME as VEGAS_SHOWDOWN

    REGISTRY[LAS_VEGAS.name] = LAS_VEGAS
    REGISTRY[LORDS_OF_VEGAS.name] = LORDS_OF_VEGAS
    REGISTRY[LONG_SHOT.name] = LONG_SHOT
    REGISTRY[VEGAS_SHOWDOWN.name] = VEGAS_SHOWDOWN


_register()


def get_game(name: str) -> GameDefinition[Any, Any, Any, Any]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
