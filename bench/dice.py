"""Outcomes per second through the dice service, beside raw JetStream publish in the same run.

    .venv/bin/python bench/dice.py [--seconds 5] [--in-flight 64] [--both-sync]

Starts its own nats-server (JetStream, `sync_interval: always` as the product runs; with
`--both-sync` also the server default) and the dice service as its own process
(`python -m services.dice`), then measures, one after another:

- raw: `js.publish` of a DiceRecord-sized message with a `Nats-Msg-Id` to a bench stream,
  awaiting each ack — one at a time, and N in flight (N tasks, each one at a time);
- service: `DiceClient.roll` (NATS request/reply; the service derives the outcome, signs the
  game's new Merkle tree head over it with Ed25519, appends the two as one message to DICE
  with `Nats-Expected-Last-Subject-Sequence`, waits for the ack and replies — one
  acknowledged write per outcome since wave 7, two (the outcome, then its head) from issue
  12 on) — one game one roll at a time, and N games each rolling one at a time;
- opening: the blind opening of one game, as the engine runs it — `open` with the seats'
  seed commitments (the seed is drawn, sealed into the KV vault, its commitment appended
  with its signed head) then `seeds` with the revealed client seeds (checked against the
  commitments, appended with its head) — one game at a time, and N at once.

The ratio service/raw is what matters (absolute numbers drift between machines); the issue
aims for >= 50% for rolls. Results go to stdout as a table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from nats.aio.client import Client as NATS

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "libs")]

from boulevard.api.v1 import dice_pb2  # noqa: E402
from boulevard.fairness import client_seed_commitment  # noqa: E402
from boulevard.messaging.server import NatsServer, free_port  # noqa: E402
from boulevard.messaging.streams import StreamSpec, ensure_stream  # noqa: E402
from services.engine.dice_client import DiceClient  # noqa: E402


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cpu:
    """CPU used by this process, the dice service and nats-server between two points."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = {"client": os.getpid(), **pids}
        self.start = {k: cpu_seconds(p) for k, p in self.pids.items()}

    def used(self) -> dict[str, float]:
        return {k: cpu_seconds(p) - self.start[k] for k, p in self.pids.items()}


async def rate(
    workers: int, seconds: float, make_worker: Callable[[int], Callable[[], Awaitable[None]]]
) -> tuple[float, int]:
    """Operations per second of `workers` concurrent loops, each one operation at a time,
    and how many operations ran."""
    stop = time.perf_counter() + seconds
    counts = [0] * workers

    async def loop(i: int) -> None:
        op = make_worker(i)
        while time.perf_counter() < stop:
            await op()
            counts[i] += 1

    start = time.perf_counter()
    await asyncio.gather(*(loop(i) for i in range(workers)))
    return sum(counts) / (time.perf_counter() - start), sum(counts)


def record_payload() -> bytes:
    outcome = dice_pb2.DiceOutcome(
        game_id="g-0123456789ab",
        nonce=12,
        kind=dice_pb2.OUTCOME_KIND_ROLL,
        count=2,
        sides=6,
        values=[3, 5],
        request_id="0123456789abcdef",
        purpose="turn",
        time_unix_ms=1_764_400_000_000,
    )
    return dice_pb2.DiceRecord(outcome=outcome).SerializeToString()


async def raw_publish(nc: NATS, workers: int, seconds: float) -> tuple[float, int]:
    js = nc.jetstream()
    payload = record_payload()

    def worker(i: int) -> Callable[[], Awaitable[None]]:
        n = 0

        async def op() -> None:
            nonlocal n
            n += 1
            await js.publish(f"rawbench.g{i}", payload, headers={"Nats-Msg-Id": f"{i}:{n}"})

        return op

    return await rate(workers, seconds, worker)


SEEDS = ["a", "b"]
COMMITMENTS = [client_seed_commitment(s) for s in SEEDS]


async def dice_messages(nc: NATS) -> int:
    """Messages on the DICE stream: each is one fsynced write (`sync_interval: always`)."""
    return (await nc.jetstream().stream_info("DICE")).state.messages


async def service_rolls(
    nc: NATS, client: DiceClient, workers: int, seconds: float, written: list[float]
) -> tuple[float, int]:
    """Rolls per second and how many; appends to `written` the DICE messages per roll."""
    games = [f"bench-{secrets.token_hex(6)}" for _ in range(workers)]
    for game in games:
        await client.open_game(game, COMMITMENTS)
        await client.fix_seeds(game, SEEDS)
    before = await dice_messages(nc)
    measured = await _rolls(client, games, workers, seconds)
    written.append((await dice_messages(nc) - before) / measured[1])
    return measured


async def _rolls(
    client: DiceClient, games: list[str], workers: int, seconds: float
) -> tuple[float, int]:
    def worker(i: int) -> Callable[[], Awaitable[None]]:
        n = 0

        async def op() -> None:
            nonlocal n
            n += 1
            await client.roll(games[i], f"r{n}", 2, 6, "bench")

        return op

    return await rate(workers, seconds, worker)


async def service_openings(client: DiceClient, workers: int, seconds: float) -> tuple[float, int]:
    def worker(i: int) -> Callable[[], Awaitable[None]]:
        async def op() -> None:
            game = f"open-{secrets.token_hex(6)}"
            await client.open_game(game, COMMITMENTS)
            await client.fix_seeds(game, SEEDS)

        return op

    return await rate(workers, seconds, worker)


async def wait_for_dice(nc: NATS, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the dice service exited")
        try:
            await nc.request("dice.rpc.reveal", b"", timeout=0.5)
            return
        except Exception:
            await asyncio.sleep(0.1)
    raise TimeoutError("the dice service did not answer")


def start_dice(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "services.dice"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def measure(sync_always: bool, seconds: float, in_flight: int, runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        server = NatsServer(Path(tmp) / "nats", sync_always=sync_always).start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
        env.update(
            NATS_URL=server.url,
            BOULEVARD_NATS_IDENTITIES_DIR=str(server.identities_dir),
            BOULEVARD_DATA_DIR=str(Path(tmp) / "data"),
            BOULEVARD_DICE_PORT=str(free_port()),
            BOULEVARD_DICE_METRICS_PORT="0",  # any free port: `boulevard up` holds 9093
            BOULEVARD_DICE_SEED_KEY=secrets.token_hex(32),
            BOULEVARD_LOG_LEVEL="warning",
            PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "libs")]),
        )
        dice = start_dice(env)
        nc = await server.connect()  # admin: the benchmark asks dice as the engine would
        try:
            await ensure_stream(
                nc.jetstream(), StreamSpec("RAWBENCH", ("rawbench.*",), deny_purge=False)
            )
            await wait_for_dice(nc, dice)
            client = DiceClient(nc, timeout=10)
            assert server.process is not None
            pids = {"dice": dice.pid, "nats": server.process.pid}
            results: dict[str, list[float]] = {}
            written: list[float] = []

            def note(key: str, measured: tuple[float, int], cpu: Cpu, parts: list[str]) -> None:
                per_second, count = measured
                used = cpu.used()
                results.setdefault(key, []).append(per_second)
                results.setdefault(f"{key} cpu", []).append(
                    sum(used[p] for p in parts) / count * 1e6
                )
                results.setdefault(f"{key} cpu+nats", []).append(
                    sum(used.values()) / count * 1e6
                    if "dice" in parts
                    else (used["client"] + used["nats"]) / count * 1e6
                )

            for _ in range(runs):  # interleaved, so drift hits both sides alike
                for workers, label in ((1, "1"), (in_flight, str(in_flight))):
                    cpu = Cpu(pids)
                    note(f"raw {label}", await raw_publish(nc, workers, seconds), cpu, ["client"])
                    cpu = Cpu(pids)
                    measured = await service_rolls(nc, client, workers, seconds, written)
                    note(f"service {label}", measured, cpu, ["client", "dice"])
                    cpu = Cpu(pids)
                    measured = await service_openings(client, workers, seconds)
                    note(f"opening {label}", measured, cpu, ["client", "dice"])
            medians = {k: statistics.median(v) for k, v in results.items()}
            medians["messages per roll"] = max(written)
            return medians
        finally:
            await nc.close()
            dice.terminate()
            try:
                dice.wait(15)
            except subprocess.TimeoutExpired:
                dice.kill()
                dice.wait()
            server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per measurement")
    parser.add_argument("--in-flight", type=int, default=64, help="concurrent games/publishers")
    parser.add_argument("--runs", type=int, default=3, help="median of this many runs")
    parser.add_argument(
        "--both-sync", action="store_true", help="also measure with the server's default sync"
    )
    args = parser.parse_args()
    configs = [True, False] if args.both_sync else [True]
    print(f"dice bench: {args.runs} runs x {args.seconds}s, medians; N = {args.in_flight}")
    header = ("sync", "in flight", "raw publish/s", "service outcomes/s", "ratio")
    print(
        "{:<8} {:>9} {:>14} {:>19} {:>6}   CPU µs/op raw | service (client+dice) ".format(*header)
    )
    openings: list[str] = []
    written = 0.0
    for sync_always in configs:
        r = await measure(sync_always, args.seconds, args.in_flight, args.runs)
        written = max(written, r["messages per roll"])
        for label in ("1", str(args.in_flight)):
            raw, svc = r[f"raw {label}"], r[f"service {label}"]
            sync = "always" if sync_always else "default"
            cpu_raw, cpu_svc = r[f"raw {label} cpu"], r[f"service {label} cpu"]
            all_raw, all_svc = r[f"raw {label} cpu+nats"], r[f"service {label} cpu+nats"]
            print(
                f"{sync:<8} {label:>9} {raw:>14,.0f} {svc:>19,.0f} {svc / raw:>6.0%}"
                f"   {cpu_raw:>5.0f} | {cpu_svc:>5.0f}   (with nats-server: {all_raw:.0f} | "
                f"{all_svc:.0f})"
            )
            opening = r[f"opening {label}"]
            openings.append(
                f"{sync:<8} {label:>9} {raw:>14,.0f} {opening:>19,.0f} {opening / raw:>6.0%}"
                f"   {r[f'opening {label} cpu']:>5.0f} µs/opening (client+dice)"
            )
    print("\nthe blind opening (open with commitments + seeds), per game:")
    print(
        "{:<8} {:>9} {:>14} {:>19} {:>6}".format(
            "sync", "in flight", "raw publish/s", "openings/s", "ratio"
        )
    )
    print("\n".join(openings))
    print(f"\nDICE messages (fsynced writes) per roll, the most of any run: {written:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
