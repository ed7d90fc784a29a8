"""Synthetic GAMES traffic and a ledger service for the integration tests."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
from nats.aio.client import Client as NATS

from boulevard.api.v1 import events_pb2
from boulevard.client.ledger import LedgerClient
from boulevard.eventlog.jetstream import encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.server import free_port
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.server import RunningService, start_service
from services.ledger.app import LedgerApp
from services.ledger.settings import LedgerSettings

SEED_HEX = "11" * 32
ROOT = Path(__file__).resolve().parents[3]


def synthetic_games(
    games: int, events_per_game: int, seed: int = 7
) -> tuple[list[events_pb2.EventEnvelope], dict[tuple[str, str], int]]:
    """Envelopes of several games interleaved (as GAMES sees them), about two thirds of
    them moving money, never overdrawing a seat; and the balance each account must end
    with (the sums of the transfers)."""
    rng = random.Random(seed)
    per_game: list[list[events_pb2.EventEnvelope]] = []
    expected: dict[tuple[str, str], int] = {}
    for g in range(games):
        game_id = f"g{seed}-{g}"
        seats = rng.randint(2, 4)
        money = dict.fromkeys(range(seats), 0)
        envs = []
        for version in range(1, events_per_game + 1):
            transfers = []
            if version == 1:
                for s in range(seats):
                    transfers.append(("bank", f"seat:{s}", 30, "starting money"))
                    money[s] += 30
            elif rng.random() < 0.66:
                for _ in range(rng.randint(1, 2)):
                    a = rng.randrange(seats)
                    if rng.random() < 0.3 or money[a] == 0:
                        amount = rng.randint(1, 9)
                        transfers.append(("bank", f"seat:{a}", amount, "payout"))
                        money[a] += amount
                    else:
                        b = rng.choice([x for x in range(seats) if x != a] + [-1])
                        amount = rng.randint(1, money[a])
                        target = "bank" if b == -1 else f"seat:{b}"
                        transfers.append((f"seat:{a}", target, amount, "rent"))
                        money[a] -= amount
                        if b != -1:
                            money[b] += amount
            for src, dst, amount, _ in transfers:
                expected[(game_id, src)] = expected.get((game_id, src), 0) - amount
                expected[(game_id, dst)] = expected.get((game_id, dst), 0) + amount
            envs.append(
                events_pb2.EventEnvelope(
                    event_id=f"{game_id}-{version}",
                    type="Paid" if transfers else "Moved",
                    game_id=game_id,
                    game="synthetic",
                    version=version,
                    time_unix_ms=1_700_000_000_000 + version,
                    payload=b"{}",
                    transfers=[
                        events_pb2.Transfer(source=s, target=t, amount=a, reason=r)
                        for s, t, a, r in transfers
                    ],
                )
            )
        per_game.append(envs)
    interleaved: list[events_pb2.EventEnvelope] = []
    cursors = [0] * games
    while any(c < len(per_game[i]) for i, c in enumerate(cursors)):
        i = rng.randrange(games)
        if cursors[i] < len(per_game[i]):
            interleaved.append(per_game[i][cursors[i]])
            cursors[i] += 1
    return interleaved, expected


def money_events(envelopes: list[events_pb2.EventEnvelope]) -> int:
    return sum(1 for e in envelopes if e.transfers)


async def publish_envelopes(
    nc: NATS, envelopes: list[events_pb2.EventEnvelope], msg_id_suffix: str = ""
) -> None:
    """Publish as the engine's event store does: one EventCommit per append (here one event
    per append) on `game.<id>`, pipelined."""
    js = nc.jetstream()
    settings = LedgerSettings()
    await ensure_stream(js, platform_streams(settings)["games"])
    futures = []
    for env in envelopes:
        commit = encode_commit(
            [NewEvent(env.event_id, env.type, env.SerializeToString())], env.version
        )
        futures.append(
            await js.publish_async(
                f"game.{env.game_id}",
                commit,
                headers={"Nats-Msg-Id": env.event_id + msg_id_suffix},
            )
        )
        if len(futures) >= 256:
            await asyncio.gather(*futures)
            futures = []
    await asyncio.gather(*futures)


def ledger_settings(nats_url: str, data_dir: Path, **overrides: object) -> LedgerSettings:
    values: dict[str, object] = {
        "NATS_URL": nats_url,
        "data_dir": data_dir,
        "ledger_signing_key": SEED_HEX,
        "ledger_sign_interval_seconds": 0.2,
        "shutdown_grace_seconds": 0.5,
    }
    values.update(overrides)
    return LedgerSettings(**values)  # type: ignore[arg-type]


@asynccontextmanager
async def running_ledger(settings: LedgerSettings) -> AsyncIterator[RunningService]:
    service = await start_service(LedgerApp(settings), settings, port=0)
    try:
        yield service
    finally:
        await service.stop()


@asynccontextmanager
async def ledger_client(address: str) -> AsyncIterator[LedgerClient]:
    async with grpc.aio.insecure_channel(address) as channel:
        yield LedgerClient(channel)


async def wait_for_size(client: LedgerClient, size: int, within: float = 60.0) -> None:
    """Until `size` entries are durable and a signed head covers them."""
    deadline = time.monotonic() + within
    while True:
        try:
            head, _, now = await client.tree_head()
            if now >= size and head.head.tree_size >= size:
                return
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"the ledger did not reach {size} entries in {within}s")
        await asyncio.sleep(0.05)


class LedgerProcess:
    """`python -m services.ledger` as a child process, which tests may SIGKILL."""

    def __init__(self, nats_url: str, data_dir: Path, **env: str) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "NATS_URL": nats_url,
            "BOULEVARD_DATA_DIR": str(data_dir),
            "BOULEVARD_LEDGER_PORT": str(self.port),
            "BOULEVARD_LEDGER_SIGNING_KEY": SEED_HEX,
            "BOULEVARD_LEDGER_SIGN_INTERVAL_SECONDS": "0.2",
            # Any free port: another ledger on this machine may hold the default one.
            "BOULEVARD_LEDGER_METRICS_PORT": "0",
            "BOULEVARD_LOG_FORMAT": "json",
            "BOULEVARD_LOG_LEVEL": "warning",
            **env,
        }
        self.log = data_dir / "ledger.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> LedgerProcess:
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.ledger"],
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()


async def publish_commit(nc: NATS, envelopes: list[events_pb2.EventEnvelope]) -> None:
    """Several events of one game appended at once: one EventCommit, one message."""
    js = nc.jetstream()
    await ensure_stream(js, platform_streams(LedgerSettings())["games"])
    commit = encode_commit(
        [NewEvent(e.event_id, e.type, e.SerializeToString()) for e in envelopes],
        envelopes[0].version,
    )
    await js.publish(
        f"game.{envelopes[0].game_id}", commit, headers={"Nats-Msg-Id": envelopes[0].event_id}
    )
