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


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", *args],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


def test_with_json_cannot_reach_is_still_one_document_and_exit_2() -> None:
    import json

    port = str(free_port())  # nothing listens there
    env = {**os.environ, **{f"BOULEVARD_{s}_PORT": port for s in ("ENGINE", "DICE", "LEDGER")}}
    ledger = _cli("audit", "ledger", "--json", env=env)
    assert ledger.returncode == 2
    said = json.loads(ledger.stdout)
    assert (said["ok"], said["reachable"]) == (False, False)
    assert said["verdict"].startswith("ERROR cannot reach the ledger")
    game = _cli("audit", "game", "g-1", "--json", "--timeout", "2", env=env)
    assert game.returncode == 2
    assert json.loads(game.stdout)["ok"] is False and "UNAVAILABLE" in game.stderr
    every = _cli("audit", "all", "--json", "--timeout", "2", env=env)
    assert every.returncode == 2 and json.loads(every.stdout)["ok"] is False


def test_the_read_commands_say_cannot_reach_with_exit_2_and_nothing_on_stdout() -> None:
    port = str(free_port())
    env = {**os.environ, "BOULEVARD_DATA_DIR": "/nonexistent-boulevard-data"}
    env.update({f"BOULEVARD_{s}_PORT": port for s in ("ENGINE", "MATCHMAKING", "LEDGER")})
    for args in (
        ["games", "--json"],
        ["game", "show", "g-1", "--json"],
        ["tickets", "--json", "--token", "not-a-token"],
        ["ledger", "balances", "--json"],
    ):
        done = _cli(*args, "--timeout", "2", env=env)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stdout == "" and f"127.0.0.1:{port}" in done.stderr, args
