"""What grpc.aio costs the server per move: one unary call against one message each way on a
stream that is already open (issue 28: every move is a unary SubmitAction).

One server process, started by this script, serves two methods with the platform's own
interceptor (`server_interceptors`, as every service runs) and the message types of a move
(a SubmitActionRequest in, a SubmitActionResponse of a move's size out, both fixed):
  - `Unary`: request in, reply out, one call per move (what SubmitAction is today);
  - `Stream`: a bidi stream opened once per caller, then per move one request in and its
    reply out (what a submit stream would be).
The handlers do nothing else, so what is measured is grpc.aio and our interceptor around a
move, not the move. The load comes from this script's process, never the server's: the
same number of callers in flight for both (`--in-flight`), each waiting for its reply before
sending again, as a seat does. The rows alternate, unary then stream, `--rounds` times, in
`--seconds` windows; the server's CPU over each window comes from /proc/<pid>/stat (user +
system), so the client's own work does not count. Printed: each row, then per number in
flight the medians of the server's CPU per call and per stream message, their ratio and
their difference (what a move would save), and the machine's load at the start and the end.

`--bare` serves without the interceptor (grpc.aio alone).

Usage: python bench/grpc_calls.py [--in-flight 10,100] [--rounds 3] [--seconds 3] [--bare]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.messaging.server import free_port
from boulevard.platform.interceptor import server_interceptors

SERVICE = "boulevard.bench.Calls"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def move_request() -> engine_pb2.SubmitActionRequest:
    """A Las Vegas move as a seat sends it: its token, action, key and signature sizes."""
    return engine_pb2.SubmitActionRequest(
        game_id="g-" + "0" * 32,
        player_token="t" * 220,
        action=engine_pb2.Action(
            las_vegas={"place_dice": {"seat": 2, "number": 5}}  # type: ignore[arg-type]
        ),
        expected_version=41,
        idempotency_key="k-" + "0" * 32,
        signature=b"s" * 64,
    )


def move_reply() -> engine_pb2.SubmitActionResponse:
    """A move's answer: two envelopes (the command accepted, its event) and a receipt."""
    envelopes = [
        events_pb2.EventEnvelope(
            event_id="e-" + "0" * 32,
            type=kind,
            game_id="g-" + "0" * 32,
            game="las_vegas",
            version=42 + i,
            time_unix_ms=1_764_000_000_000,
            causation_id="k-" + "0" * 32,
            correlation_id="m-" + "0" * 32,
            payload=b"{" + b'"x":1,' * 30 + b"}",
            prev_hash=b"h" * 32,
            schema_version=3,
        )
        for i, kind in enumerate(("CommandAccepted", "DicePlaced"))
    ]
    receipt = engine_pb2.Receipt(
        game_id="g-" + "0" * 32,
        version=43,
        chain_head=b"h" * 32,
        key_id="0" * 64,
        signature=b"s" * 64,
        time_unix_ms=1_764_000_000_000,
    )
    return engine_pb2.SubmitActionResponse(version=43, events=envelopes, receipt=receipt)


# --- the server (its own process: `--serve ADDRESS`) ------------------------------------------


async def serve(address: str, bare: bool) -> None:
    reply = move_reply()

    async def unary(request: Any, context: Any) -> engine_pb2.SubmitActionResponse:
        return reply

    async def stream(
        requests: AsyncIterator[Any], context: Any
    ) -> AsyncIterator[engine_pb2.SubmitActionResponse]:
        async for _ in requests:
            yield reply

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(
            unary,
            request_deserializer=engine_pb2.SubmitActionRequest.FromString,
            response_serializer=engine_pb2.SubmitActionResponse.SerializeToString,
        ),
        "Stream": grpc.stream_stream_rpc_method_handler(
            stream,
            request_deserializer=engine_pb2.SubmitActionRequest.FromString,
            response_serializer=engine_pb2.SubmitActionResponse.SerializeToString,
        ),
    }
    interceptors = [] if bare else server_interceptors("bench", lambda: True)
    server = grpc.aio.server(interceptors=interceptors)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


# --- the load (this process) ------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU the process has used so far (/proc/<pid>/stat utime + stime)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def load_average() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


async def unary_row(channel: grpc.aio.Channel, in_flight: int, seconds: float) -> int:
    """Calls made by `in_flight` callers, each one at a time, for `seconds`."""
    call = channel.unary_unary(
        f"/{SERVICE}/Unary",
        request_serializer=engine_pb2.SubmitActionRequest.SerializeToString,
        response_deserializer=engine_pb2.SubmitActionResponse.FromString,
    )
    request = move_request()
    end = time.monotonic() + seconds

    async def caller() -> int:
        made = 0
        while time.monotonic() < end:
            await call(request)
            made += 1
        return made

    return sum(await asyncio.gather(*(caller() for _ in range(in_flight))))


async def stream_row(
    channel: grpc.aio.Channel, in_flight: int, seconds: float, pid: int
) -> tuple[int, float]:
    """Messages sent (each answered) on `in_flight` streams opened beforehand, for
    `seconds`, and the server's CPU over that window alone (not the streams' opening)."""
    open_stream = channel.stream_stream(
        f"/{SERVICE}/Stream",
        request_serializer=engine_pb2.SubmitActionRequest.SerializeToString,
        response_deserializer=engine_pb2.SubmitActionResponse.FromString,
    )
    request = move_request()
    calls = [open_stream() for _ in range(in_flight)]
    for c in calls:  # open and warm each stream: one message each way
        await c.write(request)
        await c.read()
    start_cpu = cpu_seconds(pid)
    end = time.monotonic() + seconds

    async def caller(c: Any) -> int:
        sent = 0
        while time.monotonic() < end:
            await c.write(request)
            reply = await c.read()
            assert reply is not grpc.aio.EOF, "the server ended a stream"
            sent += 1
        return sent

    sent = sum(await asyncio.gather(*(caller(c) for c in calls)))
    used = cpu_seconds(pid) - start_cpu
    for c in calls:
        await c.done_writing()
        assert await c.read() is grpc.aio.EOF
    return sent, used


async def measure(
    pid: int, address: str, in_flights: list[int], rounds: int, seconds: float
) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        await channel.channel_ready()
        await unary_row(channel, 10, 0.5)  # warm the server up before anything is counted
        await stream_row(channel, 10, 0.5, pid)
        per: dict[tuple[str, int], list[float]] = {}
        print(f"  {'kind':<7} {'in flight':>9} {'per s':>8} {'server CPU':>11}")
        for n in in_flights:
            for _ in range(rounds):
                start = cpu_seconds(pid)
                t0 = time.perf_counter()
                calls = await unary_row(channel, n, seconds)
                wall = time.perf_counter() - t0
                unary_us = (cpu_seconds(pid) - start) / calls * 1e6
                per.setdefault(("unary", n), []).append(unary_us)
                print(f"  {'unary':<7} {n:>9} {calls / wall:>8,.0f} {unary_us:>8,.0f} us/call")
                t0 = time.perf_counter()
                sent, used = await stream_row(channel, n, seconds, pid)
                wall = time.perf_counter() - t0
                stream_us = used / sent * 1e6
                per.setdefault(("stream", n), []).append(stream_us)
                print(f"  {'stream':<7} {n:>9} {sent / wall:>8,.0f} {stream_us:>8,.0f} us/message")
        print("medians (server CPU; a stream message is one request in and its reply out):")
        for n in in_flights:
            unary = statistics.median(per[("unary", n)])
            stream = statistics.median(per[("stream", n)])
            print(
                f"  {n:>3} in flight: unary {unary:,.0f} us/call, stream {stream:,.0f} us/message, "
                f"ratio {unary / stream:.1f}x, a move saves {unary - stream:,.0f} us"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-flight", default="10,100", help="callers at once, comma-separated")
    parser.add_argument("--rounds", type=int, default=3, help="unary/stream pairs per count")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds a row")
    parser.add_argument("--bare", action="store_true", help="a server without our interceptor")
    parser.add_argument("--serve", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.bare))
        return
    address = f"127.0.0.1:{free_port()}"
    command = [sys.executable, __file__, "--serve", address, *(["--bare"] if args.bare else [])]
    server = subprocess.Popen(command)
    try:
        print(f"load average at the start: {load_average()}")
        print(
            "server: "
            + ("bare grpc.aio" if args.bare else "grpc.aio with the platform's interceptor")
        )
        in_flights = [int(n) for n in args.in_flight.split(",")]
        asyncio.run(measure(server.pid, address, in_flights, args.rounds, args.seconds))
        print(f"load average at the end: {load_average()}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
