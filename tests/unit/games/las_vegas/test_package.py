"""The package itself: data as printed, pure imports, registered."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import boulevard.games.las_vegas
from boulevard.games import REGISTRY
from boulevard.games.las_vegas import GAME
from boulevard.games.las_vegas.data import DATA, NOTE_VALUES

K = 1000

# The pure rules may read their own data file at import; nothing else with I/O, clock,
# randomness, logging or concurrency.
ALLOWED = {
    "__future__",
    "collections",
    "collections.abc",
    "dataclasses",
    "enum",
    "importlib",
    "json",
    "types",
    "typing",
}


def test_the_54_banknotes_as_printed() -> None:
    assert len(NOTE_VALUES) == 54 and sum(NOTE_VALUES) == 2_500_000
    assert Counter(NOTE_VALUES) == {
        10 * K: 6,
        20 * K: 8,
        30 * K: 8,
        40 * K: 6,
        50 * K: 6,
        60 * K: 5,
        70 * K: 5,
        80 * K: 5,
        90 * K: 5,
    }
    assert (DATA.casinos, DATA.rounds, DATA.dice_per_player, DATA.refill_minimum) == (
        6,
        4,
        8,
        50 * K,
    )
    assert dict(DATA.white_dice_per_player) == {2: 4, 3: 2, 4: 2}


def test_registered() -> None:
    assert REGISTRY["las_vegas"] is GAME
    assert (GAME.min_players, GAME.max_players) == (2, 5)


def test_rules_import_nothing_impure() -> None:
    package = Path(boulevard.games.las_vegas.__file__).parent
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name in ALLOWED or name.startswith("boulevard.games"), (path.name, name)
