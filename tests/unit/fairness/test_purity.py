"""The fairness package stays pure: stdlib hashing only, no I/O, no clock, no randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import boulevard.fairness

ALLOWED = {"__future__", "hashlib", "hmac", "struct", "dataclasses", "collections.abc", "typing"}


def test_fairness_imports_only_pure_stdlib() -> None:
    package = Path(boulevard.fairness.__file__).parent
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name in ALLOWED or name.startswith("boulevard.fairness"), (path, name)
