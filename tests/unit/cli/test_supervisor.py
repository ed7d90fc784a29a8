"""`boulevard up`'s supervisor: a service that keeps exiting is restarted with a doubling
backoff and a restart count, and nothing is restarted once the platform is stopping."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from boulevard.cli import up


class Crashing(up.Platform):
    """A platform whose one 'service' exits with status 3 at once."""

    def spawn(self, name: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])


def test_a_crashing_service_is_restarted_with_a_growing_backoff(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(up, "BACKOFF_FIRST", 0.1)
    platform = Crashing()
    child = up.Child("engine", platform.spawn("engine"), "127.0.0.1:1", backoff=0.1)
    platform.children.append(child)
    platform.supervise(poll=0.02)
    deadline = time.monotonic() + 20
    while child.restarts < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    platform.stop()
    out = capsys.readouterr().out
    assert child.restarts >= 3
    assert "engine       exited with code 3; restarting in 0.1s (restart 1)" in out
    assert "restarting in 0.2s (restart 2)" in out
    assert "restarting in 0.4s (restart 3)" in out
    assert "restarted (pid" in out
    restarts = child.restarts
    time.sleep(0.5)
    assert child.restarts == restarts  # stopped: no more restarts
    assert platform.children == []


def test_a_cluster_size_out_of_range_is_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from boulevard.cli.main import main

    assert main(["up", "--cluster", "9", "--no-demo"]) == 2
    assert "--cluster takes 1 to 5 servers, not 9" in capsys.readouterr().out
