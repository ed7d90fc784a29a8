"""`boulevard up` starts NATS and the four services; each answers health and reflection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import grpc
import nats
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, matchmaking_pb2, matchmaking_pb2_grpc
from boulevard.games import get_game
from boulevard.messaging.server import free_port
from boulevard.platform.identity import bearer
from boulevard.seats.player import SeatPlayer, play_game
from tests.support.keys import TEST_KEY, TEST_PUBLIC_KEY, seat_key, seat_keys
from tests.support.processes import (
    SERVICES,
    address,
    lines_until,
    metrics_url,
    service_env,
    stop_up,
)

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


def login(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "boulevard.cli.main", "login", *args],
        env=env, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout.strip()


async def queue_ticket(addr: str, token: str) -> matchmaking_pb2.Ticket:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
        reply = await stub.CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                game="las_vegas", min_seats=5, public_key=TEST_PUBLIC_KEY
            ),
            metadata=bearer(token),
            timeout=5,
        )
        return reply.ticket


async def list_games(addr: str, token: str) -> list[engine_pb2.GameSummary]:
    async with grpc.aio.insecure_channel(addr) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        reply = await stub.ListGames(engine_pb2.ListGamesRequest(), metadata=bearer(token))
        return list(reply.games)


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
    try:
        lines = lines_until(proc, "platform up", 60)
        assert any("platform up" in line for line in lines), "".join(lines)
        for name in SERVICES:
            assert any(name in line and "SERVING" in line for line in lines)
            listed = asyncio.run(check(address(env, name), PROTO_SERVICE[name]))
            assert PROTO_SERVICE[name] in listed
            assert "grpc.health.v1.Health" in listed
        # The gateway's /metrics, on its own port: `up` waited on its health check over
        # Connect, which it counted.
        with urllib.request.urlopen(metrics_url(env, "gateway"), timeout=5) as scraped:
            text = scraped.read().decode()
        assert 'procedure="grpc.health.v1.Health/Check",protocol="connect"' in text
        # `boulevard login` prints tokens of the issuer `up` made; the services accept them.
        token = login(env, "alice")
        ticket = asyncio.run(queue_ticket(address(env, "matchmaking"), token))
        assert ticket.player_id == "alice"
        (key,) = (tmp_path / "data" / "issuer" / "keys").glob("*.pem")
        assert key.stat().st_mode & 0o777 == 0o600
        operator = login(env, "olga", "--role", "operator")
        assert asyncio.run(list_games(address(env, "engine"), operator)) == []
        # The read commands, with no token given, call as an operator of this issuer.
        listed = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "tickets", "--json"],
            env=env, capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        assert [(t["ticket_id"], t["player_id"]) for t in json.loads(listed.stdout)["tickets"]] == [
            (ticket.ticket_id, "alice")
        ]
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
        stop_up(proc)


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
    assert "demo: game over — 1. demo-" in out
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
                 "ledger": 50054, "gateway": 8080}  # fmt: skip


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


def processes_under(folder: Path) -> list[int]:
    """The processes started for `folder`: NATS names its config there, the services their
    data dir (in their environment, not their command line)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            seen = (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if str(folder).encode() in seen:
            found.append(int(proc.name))
    return found


def test_up_stops_everything_when_its_output_reader_is_gone(tmp_path: Path) -> None:
    """`boulevard up | tee up.log`, then Ctrl-C: the terminal's SIGINT ends tee first, so
    "stopping…" met a closed pipe; the BrokenPipeError skipped the stop and left NATS (in a
    session of its own) and the services running. It must stop everything all the same."""
    env = service_env(None, tmp_path / "data")
    nats_port = free_port()
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(nats_port)
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
            env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        seen = lines_until(proc, "platform up", 120)
        assert seen and "platform up" in seen[-1], "".join(seen)
        assert proc.stdout is not None
        proc.stdout.close()  # tee is gone
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        assert not processes_under(tmp_path), "processes left behind"
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", nats_port), 1):
            pass
        assert proc.returncode == 0, errors.read_text()[-3000:]
        assert "Traceback" not in errors.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in processes_under(tmp_path):  # what this test started, had the stop failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_up_refuses_ports_something_else_listens_on(tmp_path: Path) -> None:
    """A second `boulevard up` on the default ports found the first one's services there,
    said "platform up" and restarted its own (which could not bind) forever. Now it names
    the busy port and starts nothing."""
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", int(env["BOULEVARD_ENGINE_PORT"])))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    engine = f"127.0.0.1:{env['BOULEVARD_ENGINE_PORT']} (engine)"
    assert f"cannot start: something already listens on {engine}" in done.stdout
    assert "another `boulevard up`" in done.stdout and "platform up" not in done.stdout
    assert not (tmp_path / "data" / "nats").exists()  # nothing was started
    assert not processes_under(tmp_path)


class UpProcess:
    """`boulevard up --no-demo` with its output read line by line in the background."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "boulevard.cli.main", "up", "--no-demo"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matching {pattern!r} in:\n{''.join(self.seen)}")

    def child_pid(self, service: str) -> int:
        """The pid of the service process `up` runs now (its child running the module)."""
        found = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid), "-f", f"services[.]{service}$"],
            capture_output=True, text=True, check=False,
        ).stdout.split()  # fmt: skip
        assert len(found) == 1, f"{service}: {found}"
        return int(found[0])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_up_restarts_a_killed_service_and_resumes_bot_seats(tmp_path: Path) -> None:
    """SIGKILL the engine: `up` restarts it (restart count in its output) and a game goes on
    to the end. SIGKILL matchmaking while its bots play: the restarted process resumes their
    seats once the lease lapses, and the human's game finishes."""
    env = service_env(None, tmp_path / "data")
    env["BOULEVARD_EMBEDDED_NATS_PORT"] = str(free_port())
    env["BOULEVARD_MATCHMAKING_BOT_LEASE_SECONDS"] = "3"
    up = UpProcess(env)
    try:
        up.wait_for("platform up")
        pids = {name: up.child_pid(name) for name in SERVICES}
        token = login(env, "ops", "--role", "operator")
        alice_token = login(env, "alice")

        async def engine_game() -> None:
            async with grpc.aio.insecure_channel(address(env, "engine")) as channel:
                engine = engine_pb2_grpc.EngineServiceStub(channel)
                created = await engine.CreateGame(
                    engine_pb2.CreateGameRequest(
                        request_id=uuid.uuid4().hex,
                        game="las_vegas",
                        seats=[
                            engine_pb2.SeatAssignment(
                                seat=i,
                                player_id=f"p{i}",
                                public_key=seat_key(i).public_hex,
                            )
                            for i in range(3)
                        ],
                    ),
                    metadata=(("authorization", f"Bearer {token}"),),
                )
                os.kill(pids["engine"], signal.SIGKILL)
                up.wait_for(r"engine\s+exited with code -9; restarting in [\d.]+s \(restart 1\)")
                up.wait_for(r"engine\s+SERVING again on .*restart 1\)")
                await play_game(channel, created.game_id, "las_vegas",
                                list(created.player_tokens), seat_keys(3), seed=5)  # fmt: skip
                final = await engine.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
                assert final.status == engine_pb2.GAME_STATUS_FINISHED

        asyncio.run(engine_game())

        async def bot_game() -> None:
            async with grpc.aio.insecure_channel(address(env, "matchmaking")) as channel:
                mm = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
                made = await mm.CreateTicket(
                    matchmaking_pb2.CreateTicketRequest(
                        request_id=uuid.uuid4().hex, game="las_vegas",
                        public_key=TEST_PUBLIC_KEY,
                        min_seats=3, max_seats=3, bot_fill_after_seconds=1,
                    ),
                    metadata=bearer(alice_token),
                )  # fmt: skip
                async for update in mm.WatchTicket(
                    matchmaking_pb2.WatchTicketRequest(ticket_id=made.ticket.ticket_id),
                    timeout=60,
                    metadata=bearer(alice_token),
                ):
                    if update.ticket.status == matchmaking_pb2.TICKET_STATUS_ASSIGNED:
                        ticket = update.ticket
                        break
            game = get_game("las_vegas")
            async with grpc.aio.insecure_channel(address(env, "engine")) as channel:
                engine = engine_pb2_grpc.EngineServiceStub(channel)
                alice = SeatPlayer(
                    engine, ticket.game_id, game.name, ticket.seat, ticket.player_token,
                    game.bots["heuristic"], random.Random(1), TEST_KEY,
                )  # fmt: skip
                first = None
                for _ in range(100):
                    with contextlib.suppress(grpc.aio.AioRpcError):
                        first = await engine.GetGame(
                            engine_pb2.GetGameRequest(game_id=ticket.game_id)
                        )
                        break
                    await asyncio.sleep(0.1)
                assert first is not None
                playing = asyncio.create_task(alice.play())
                # Once the bots have moved a few times, kill the process playing them.
                for _ in range(300):
                    got = await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
                    if got.version >= first.version + 8 or playing.done():
                        break
                    await asyncio.sleep(0.1)
                assert not playing.done(), "the game ended before matchmaking could be killed"
                os.kill(pids["matchmaking"], signal.SIGKILL)
                up.wait_for(r"matchmaking\s+exited with code -9; restarting")
                up.wait_for(r"matchmaking\s+SERVING again on .*restart 1\)")
                await asyncio.wait_for(playing, 120)
                final = await engine.GetGame(engine_pb2.GetGameRequest(game_id=ticket.game_id))
                assert final.status == engine_pb2.GAME_STATUS_FINISHED

        asyncio.run(bot_game())
        # The restarted process took the seats over (a redelivered lease), not a fresh start.
        with urllib.request.urlopen(metrics_url(env, "matchmaking"), timeout=5) as reply:
            metrics = reply.read()
        resumed = re.search(rb"^boulevard_bot_games_resumed_total ([\d.]+)$", metrics, re.M)
        assert resumed is not None and float(resumed.group(1)) >= 1
        assert up.proc.poll() is None  # still up through both deaths
        up.stop()
        assert up.proc.returncode == 0
    finally:
        up.stop()
