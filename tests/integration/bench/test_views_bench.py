"""bench/views.py (WatchGame's per-version work, in-process) still runs against the
engine's servicer: a few versions of one game, every option row and every part printed.
Nothing is timed: the figures are the bench's to report, not a test's to judge."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import views  # noqa: E402


async def test_the_views_bench_prints_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    await views.main(["las_vegas"], spectators=1, moves=4)
    out = capsys.readouterr().out
    assert "las_vegas: 4 versions, 4 seat streams + 1 spectators" in out
    for label in views.OPTIONS:
        assert re.search(rf"{re.escape(label)}\s+[0-9.]+\s+\(", out), label
    for label in ("the game's view, every seat", "every stream's update built and encoded"):
        assert re.search(rf"{re.escape(label)}\s+[0-9.]+\n", out), label
