"""The package itself: pure imports only."""

from __future__ import annotations

import ast
from pathlib import Path

import boulevard.games.vegas_showdown

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


def test_rules_import_nothing_impure() -> None:
    package = Path(boulevard.games.vegas_showdown.__file__).parent
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
