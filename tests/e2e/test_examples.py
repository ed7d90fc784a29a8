"""The client examples (examples/python, examples/node) play whole games against the real
platform, started as `boulevard up` starts it (its local issuer, `boulevard login`), and each
game they played then passes `boulevard audit game`: what docs/clients.md teaches is enough
to write a client the platform accepts and an auditor can check."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from boulevard.messaging.server import free_port
from tests.support.processes import address, service_env

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PYTHON_CLIENT = ROOT / "examples" / "python" / "client.py"
NODE_DIR = ROOT / "examples" / "node"


@dataclass
class Up:
    env: dict[str, str]

    def cli(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", *args],
            env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def login(self, name: str) -> str:
        done = self.cli("login", name)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def addresses(self) -> list[str]:
        return [
            "--matchmaking", address(self.env, "matchmaking"),
            "--engine", address(self.env, "engine"),
            "--dice", address(self.env, "dice"),
        ]  # fmt: skip


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """`boulevard up --no-demo` on free ports, until the module's tests are done."""
    env = service_env(None, tmp_path_factory.mktemp("examples") / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "platform up" in line:
                break
        assert any("platform up" in line for line in lines), "".join(lines)
        yield Up(env)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def node_client() -> list[str]:
    """`npm ci` in examples/node (as on a fresh clone), then the command that runs it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"{'node' if node is None else 'npm'} is not installed")
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund"],
        cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [node, str(NODE_DIR / "client.js")]


PYTHON = [sys.executable, str(PYTHON_CLIENT)]


def start(command: list[str], up: Up, player: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*command, "--token", up.login(player), *up.addresses(), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, object]:
    """Wait for an example to end; check what it printed and return its result line."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the example did not finish:\n{out[-3000:]}\n{err[-3000:]}") from None
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    lines = out.splitlines()
    game_id = next(line.removeprefix("game_id: ") for line in lines if line.startswith("game_id: "))
    assert any(line.startswith("ranking: 1. ") for line in lines), out[-2000:]
    assert "dice: revealed seed matches the commitment" in lines
    played = [line for line in lines if ": played " in line]
    assert played, out[-2000:]
    (result_line,) = [line for line in lines if line.startswith("result: ")]
    result: dict[str, object] = json.loads(result_line.removeprefix("result: "))
    assert result["game_id"] == game_id and result["dice_ok"] is True
    return result


def audited(up: Up, game_id: str) -> str:
    done = up.cli("audit", "game", game_id, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"PASS las_vegas game {game_id} (finished)"), done.stdout
    return done.stdout


def check_against_bots(result: dict[str, object], player: str) -> None:
    ids = result["player_ids"]
    assert isinstance(ids, list) and len(ids) == 2
    assert ids[int(str(result["seat"]))] == player
    assert next(p for p in ids if p != player).startswith("bot-")
    ranking = result["ranking"]
    assert isinstance(ranking, list)
    assert sorted(s for group in ranking for s in group) == [0, 1]


def test_the_python_example_plays_a_game_against_a_bot_to_the_end(up: Up) -> None:
    result = finish(start(PYTHON, up, "py-alice"))
    check_against_bots(result, "py-alice")
    out = audited(up, str(result["game_id"]))
    assert "bot seats [" in out


def test_the_node_example_plays_a_game_against_a_bot_to_the_end(
    up: Up, node_client: list[str]
) -> None:
    result = finish(start(node_client, up, "node-bob"))
    check_against_bots(result, "node-bob")
    audited(up, str(result["game_id"]))


def test_the_two_examples_play_each_other(up: Up, node_client: list[str]) -> None:
    """Both at one table and no bots: one of them signs for seat 1, whose moves carry a
    non-zero seat in the action (the canonical encoding's test), and each sees the other's
    moves only through WatchGame."""
    python = start(PYTHON, up, "py-carol", "--bot-fill", "0")
    node = start(node_client, up, "node-dave", "--bot-fill", "0")
    a, b = finish(python), finish(node)
    assert a["game_id"] == b["game_id"]
    assert {a["seat"], b["seat"]} == {0, 1}
    assert sorted(a["player_ids"]) == ["node-dave", "py-carol"]  # type: ignore[arg-type]
    assert a["ranking"] == b["ranking"] and a["scores"] == b["scores"]
    out = audited(up, str(a["game_id"]))
    assert "bot seats" not in out
