"""`boulevard up` starts NATS and the four services; each answers health and reflection."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import nats
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from boulevard.messaging.server import free_port
from tests.support.processes import SERVICES, address, service_env

pytestmark = pytest.mark.e2e

PROTO_SERVICE = {
    "matchmaking": "boulevard.v1.MatchmakingService",
    "engine": "boulevard.v1.EngineService",
    "dice": "boulevard.v1.DiceService",
    "ledger": "boulevard.v1.LedgerService",
}


async def check(addr: str, service: str) -> list[str]:
    async with grpc.aio.insecure_channel(addr) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        async for response in stub.ServerReflectionInfo(iter([request]), timeout=5):
            return [s.name for s in response.list_services_response.service]
    raise AssertionError("no reflection answer")


async def refused_without_credentials(port: int) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization violation"):
        nc = await nats.connect(
            f"nats://127.0.0.1:{port}", allow_reconnect=False, max_reconnect_attempts=0,
            connect_timeout=2,
        )  # fmt: skip
        await nc.close()


def test_up_starts_every_service_healthy_and_stops_cleanly(tmp_path: Path) -> None:
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    proc = subprocess.Popen(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "platform up" in line:
                break
        assert any("platform up" in line for line in lines), "".join(lines)
        for name in SERVICES:
            assert any(name in line and "SERVING" in line for line in lines)
            listed = asyncio.run(check(address(env, name), PROTO_SERVICE[name]))
            assert PROTO_SERVICE[name] in listed
            assert "grpc.health.v1.Health" in listed
        # The embedded NATS of `make run` is closed: no anonymous client gets in.
        asyncio.run(refused_without_credentials(int(env["BOULEVARD_EMBEDDED_NATS_PORT"])))
        identities = tmp_path / "data" / "nats-identities"
        for name in (*SERVICES, "admin"):
            assert (identities / f"{name}.nk").stat().st_mode & 0o777 == 0o600
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "stopped" in rest
        assert (tmp_path / "data" / "nats").is_dir()  # the embedded store lives there
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_up_plays_the_demo_game_to_the_end(tmp_path: Path) -> None:
    """What `make run` shows without a terminal (a CI log): a banner, the demo game as
    plain-text frames (board, moves in words, dice with nonces), the ranking, both audits
    PASS, and a clean stop. The README's capture must still have this shape."""
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    result = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "up", "--exit-after-demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    assert "\x1b" not in out  # no terminal control codes in a log
    assert "Traceback" not in out + result.stderr
    assert "logs in" in out and (tmp_path / "data" / "logs" / "engine.log").stat().st_size > 0
    assert '{"' not in out  # service logs went to their files, not here
    assert "demo: Lords of Vegas, 4 bots" in out
    assert "legend:" in out  # the board, drawn by the game's own renderer
    assert "dice service shuffles the deck (nonce 0" in out
    assert " builds a " in out and " draws lot " in out  # moves in words
    assert "demo: game over — 1. bot-" in out
    assert out.count("    PASS  ") == 3, out[-2000:]  # dice, ledger, game
    assert out.rstrip().endswith("stopped")
    check_readme_capture(out)


README = Path(__file__).resolve().parents[2] / "README.md"
BEGIN, END = "<!-- make-run:begin -->", "<!-- make-run:end -->"


def capture_of(out: str) -> list[str]:
    """The lines the README shows: the banner and the first frame, then the ending."""
    lines = out.rstrip().splitlines()
    first_moves = next(i for i, line in enumerate(lines) if "to act:" in line)
    ending = next(i for i, line in enumerate(lines) if line.startswith("demo: game over"))
    return [*lines[: first_moves + 1], "  …", *lines[ending:]]


def shape(lines: list[str]) -> list[str]:
    """What stays the same from run to run: the banner and the ending without ids, digests,
    numbers, paths or padding; the first frame only as "a board, then moves" (its contents
    are a random game's)."""
    out: list[str] = []
    frame: list[str] = []
    for line in lines:
        if line.startswith("─"):
            frame.append(line)
            if len(frame) == 2:
                out.append("<board>")
            continue
        if len(frame) == 1:  # inside the board
            continue
        if len(frame) == 2 and line.startswith("  v"):
            if out[-1] != "<moves>":
                out.append("<moves>")
            continue
        if line.startswith("demo: game over"):
            line = "demo: game over — <ranking>"  # ties make a ranking's shape vary
        line = re.sub(r"/\S*", "/…", line)
        line = re.sub(r"[0-9a-f]{12,}", "H", line)
        line = re.sub(r"\d+", "N", line)
        out.append(re.sub(r"\s+", " ", line).strip())
    return out


DEFAULT_PORTS = {"nats-server": 4222, "matchmaking": 50051, "engine": 50052, "dice": 50053,
                 "ledger": 50054}  # fmt: skip


def as_make_run_prints(line: str) -> str:
    """A test run's line as `make run` in a checkout prints it: default ports, `.data`."""
    for name, port in DEFAULT_PORTS.items():
        if line.strip().startswith(name):
            line = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", line)
    return re.sub(r"/tmp/\S*/data", "/home/you/boulevard/.data", line)


def check_readme_capture(out: str) -> None:
    text = README.read_text()
    assert BEGIN in text and END in text, f"README.md lost its {BEGIN} … {END} block"
    before, rest = text.split(BEGIN, 1)
    shown, after = rest.split(END, 1)
    shown_lines = [line for line in shown.strip().splitlines() if not line.startswith("```")]
    actual = capture_of(out)
    if os.environ.get("BOULEVARD_UPDATE_README") == "1":
        block = "\n".join(["```text", *(as_make_run_prints(line) for line in actual), "```"])
        README.write_text(f"{before}{BEGIN}\n{block}\n{END}{after}")
        return
    assert shape(shown_lines) == shape(actual), (
        "what `make run` prints changed shape; rerun this test with BOULEVARD_UPDATE_README=1 "
        "to refresh the README's capture\n" + "\n".join(actual)
    )


def test_up_on_a_terminal_draws_the_game_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    """`make run` as a person sees it, under a pseudo-terminal: the board is drawn, the game
    ends, both audits print PASS, and Ctrl-C stops everything with no traceback and no
    process left behind."""
    pexpect = pytest.importorskip("pexpect")
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    child = pexpect.spawn(
        sys.executable,
        ["-m", "boulevard.cli.main", "up", "--speed", "50"],
        env=env,
        encoding="utf-8",
        timeout=240,
        dimensions=(50, 160),
    )
    seen: list[str] = []
    try:
        for marker in ("SERVING", "legend:", "demo: game over", "PASS", "PASS", "Ctrl-C to stop"):
            child.expect_exact(marker)
            seen.append(child.before + marker)
        child.sendcontrol("c")
        child.expect(pexpect.EOF, timeout=60)
        seen.append(child.before)
    finally:
        child.close(force=True)
    screen = "".join(seen)
    assert "\x1b[2J" in screen  # on a terminal each frame replaces the last
    assert "Traceback" not in screen and "exception was never retrieved" not in screen
    assert screen.rstrip().endswith("stopped")
    assert child.exitstatus == 0, screen[-2000:]
    logs = tmp_path / "data" / "logs"
    for name in SERVICES:
        text = (logs / f"{name}.log").read_text()
        assert "Traceback" not in text, f"{name}.log:\n{text[-3000:]}"
        assert text.count('"stopped"') == 1, f"{name} did not say stopped exactly once"
    left = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True, check=False
    ).stdout.split()
    assert not left, f"processes left behind: {left}"
    for name in SERVICES:  # nothing answers on the services' ports any more
        host, _, port = address(env, name).rpartition(":")
        with pytest.raises(OSError), socket.create_connection((host, int(port)), timeout=1):
            pass
