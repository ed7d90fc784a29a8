"""The browser gateway's cost: one unary call through it against the same call over raw gRPC,
measured in the same run.

A no-op gRPC server answers `boulevard.v1.EngineService/GetGame` with a fixed response (no
NATS, no engine: what is measured is the hop, not the service). The gateway
(`python -m services.gateway`, as `boulevard up` runs it, plain HTTP on loopback) forwards to
it. One client makes `--calls` sequential calls each way, after a warm-up, over one kept-alive
connection:

- raw gRPC: grpc.aio straight to the no-op server;
- Connect (binary proto) and gRPC-Web (binary) through the gateway, with httpx.

Printed per way: mean and p50/p99 per call, their ratios to raw gRPC's, and the
gateway process's CPU per call (from /proc). Sequential calls measure the added latency of
one call, not the gateway's throughput under concurrency.

Usage: python bench/gateway.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.messaging.server import free_port

GAME_ID = "g" + "0" * 32
PATH = "/boulevard.v1.EngineService/GetGame"

NOOP_ENGINE = """
import asyncio, sys, grpc
from boulevard.api.v1 import engine_pb2
REPLY = engine_pb2.GetGameResponse(game_id=sys.argv[2], game="las_vegas", version=7)
async def get_game(request, context):
    return REPLY
async def main():
    server = grpc.aio.server()
    handler = grpc.unary_unary_rpc_method_handler(
        get_game,
        request_deserializer=engine_pb2.GetGameRequest.FromString,
        response_serializer=engine_pb2.GetGameResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler("boulevard.v1.EngineService", {"GetGame": handler})]
    )
    server.add_insecure_port(sys.argv[1])
    await server.start()
    await server.wait_for_termination()
asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(name: str, seconds: list[float], raw: list[float], cpu: float | None) -> str:
    """One way's line; the ratios are to raw gRPC's mean and median (on a busy machine the
    median is the steadier of the two)."""
    ordered = sorted(seconds)
    mean, p50 = statistics.fmean(ordered), statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    line = (
        f"  {name:<18} mean {mean * 1e6:7.0f} µs  p50 {p50 * 1e6:7.0f} µs  p99 {p99 * 1e6:7.0f} µs"
        f"  ratio mean {mean / statistics.fmean(raw):5.2f}  p50 {p50 / statistics.median(raw):5.2f}"
    )
    if cpu is not None:
        line += f"  gateway CPU {cpu / len(ordered) * 1e6:5.0f} µs/call"
    return line


async def raw_calls(address: str, n: int) -> list[float]:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        request = engine_pb2.GetGameRequest(game_id=GAME_ID)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            reply = await stub.GetGame(request)
            times.append(time.perf_counter() - start)
            assert reply.game_id == GAME_ID
        return times


def gateway_calls(client: httpx.Client, url: str, n: int, grpc_web: bool) -> list[float]:
    body = engine_pb2.GetGameRequest(game_id=GAME_ID).SerializeToString()
    if grpc_web:
        content = struct.pack(">BI", 0, len(body)) + body
        headers = {"content-type": "application/grpc-web+proto", "x-grpc-web": "1"}
    else:
        content, headers = body, {"content-type": "application/proto"}
    times = []
    for _ in range(n):
        start = time.perf_counter()
        reply = client.post(url + PATH, content=content, headers=headers)
        times.append(time.perf_counter() - start)
        assert reply.status_code == 200, reply.text
        data = (
            reply.content[5 : 5 + struct.unpack(">I", reply.content[1:5])[0]]
            if grpc_web
            else reply.content
        )
        assert engine_pb2.GetGameResponse.FromString(data).game_id == GAME_ID
    return times


def wait_http(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the gateway exited: {log.read_text()}")
        try:
            httpx.get(url + "/", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"the gateway did not answer: {log.read_text()}")


def main(calls: int) -> None:
    engine_port, gateway_port = free_port(), free_port()
    engine_address = f"127.0.0.1:{engine_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOULEVARD_")}
    env |= {
        "BOULEVARD_GATEWAY_PORT": str(gateway_port),
        "BOULEVARD_GATEWAY_METRICS_PORT": str(free_port()),
        "BOULEVARD_GATEWAY_ENGINE_TARGET": engine_address,
        "BOULEVARD_LOG_LEVEL": "warning",
    }
    url = f"http://127.0.0.1:{gateway_port}"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "gateway.log"
        engine = subprocess.Popen([sys.executable, "-c", NOOP_ENGINE, engine_address, GAME_ID])
        with open(log, "wb") as out:
            gateway = subprocess.Popen(
                [sys.executable, "-m", "services.gateway"], env=env, stdout=out, stderr=out
            )
        try:
            wait_http(url, gateway, log)
            warm = max(50, calls // 10)
            asyncio.run(raw_calls(engine_address, warm))
            raw = asyncio.run(raw_calls(engine_address, calls))
            print(f"bench/gateway.py: {calls} sequential GetGame calls each way (after {warm})")
            print(summary("raw gRPC", raw, raw, None))
            with httpx.Client() as client:
                for name, grpc_web in (("gateway Connect", False), ("gateway gRPC-Web", True)):
                    gateway_calls(client, url, warm, grpc_web)
                    before = cpu_seconds(gateway.pid)
                    times = gateway_calls(client, url, calls, grpc_web)
                    used = cpu_seconds(gateway.pid) - before
                    print(summary(name, times, raw, used))
            print(f"  load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
        finally:
            for process in (gateway, engine):
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    main(parser.parse_args().calls)
