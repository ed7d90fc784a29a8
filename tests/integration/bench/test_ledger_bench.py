"""bench/ledger.py's `cpu` section still runs: the poster in-process on a short trickle
published by the bench's own publisher process, every line printed, and the counts it
prints are the ledger's (no task per message since the feed). Nothing is timed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


def test_the_ledger_cpu_bench_prints_every_row() -> None:
    out = subprocess.run(
        [sys.executable, "bench/ledger.py", "--only", "cpu", "--cpu-commits", "200"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "200 commits, 300 envelopes" in out, out
    assert re.search(r"CPU per envelope .*\s[0-9.]+ µs", out), out
    assert re.search(r"NATS messages in / out per envelope\s+[0-9.]+ / [0-9.]+", out), out
    tasks = re.search(r"asyncio tasks created per envelope\s+([0-9.]+)", out)
    assert tasks is not None and float(tasks.group(1)) < 0.1, out
    assert len(re.findall(r"decoding: .*\s[0-9.]+ µs/envelope", out)) == 3, out
