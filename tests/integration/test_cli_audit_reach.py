"""The audit commands find their services the way the services are configured, and tell
"cannot reach" (exit 2) from "verification failed" (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys

from boulevard.messaging.server import free_port


def _audit(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "audit", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )


def test_audit_ledger_reads_the_ledger_port_setting_and_says_it_cannot_reach_it() -> None:

    port = free_port()  # nothing listens there
    env = {**os.environ, "BOULEVARD_LEDGER_PORT": str(port)}
    done = _audit("ledger", "--quiet", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"cannot reach the ledger at 127.0.0.1:{port}" in done.stdout
    assert "FAIL" not in done.stdout


def test_audit_dice_says_it_cannot_reach_the_dice_service() -> None:

    port = free_port()
    env = {**os.environ, "BOULEVARD_DICE_PORT": str(port)}
    done = _audit("dice", "g-1", "--no-engine", "--timeout", "2", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
