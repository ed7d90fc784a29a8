"""What a trace header on every GAMES message would cost the replay path.

Stores the same messages three ways on a throwaway nats-server (no headers; the two headers
every append carries; those two plus a W3C `traceparent`) and times a raw ordered-consumer
replay of each, best of five runs interleaved. docs/operations.md ("Observing: traces")
quotes the result. Usage: python bench/trace_headers.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import nats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import nats_server
from eventlog import PAYLOAD, raw_replay

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def headers_for(kind: str, i: int) -> dict[str, str] | None:
    if kind == "none":
        return None
    headers = {"Nats-Msg-Id": f"{kind}-{i}", "Nats-Expected-Last-Subject-Sequence": "0"}
    if kind == "traced":
        headers["traceparent"] = TRACEPARENT
    return headers


async def run(n: int) -> None:
    with nats_server() as server:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        await js.add_stream(name="BENCH", subjects=["b.>"])
        for kind in ("none", "two", "traced"):
            pending = []
            for i in range(n):
                # one subject per message: the expected-sequence header then always holds
                subject = f"b.{kind}.{i}"
                pending.append(
                    await js.publish_async(subject, PAYLOAD, headers=headers_for(kind, i))
                )
                if len(pending) >= 1000:
                    await asyncio.gather(*pending)
                    pending.clear()
            await asyncio.gather(*pending)
        rates = dict.fromkeys(("none", "two", "traced"), 0.0)
        for _ in range(5):  # interleaved, so a busy moment hurts every kind alike
            for kind in rates:
                rates[kind] = max(rates[kind], await raw_replay(nc, f"b.{kind}.>", n))
        await nc.close()
    base = rates["two"]
    print(f"raw replay of {n:,} messages of {len(PAYLOAD)} bytes (best of 5, interleaved):")
    print(f"  no headers                     {rates['none']:>10,.0f} msg/s")
    print(f"  the 2 append headers (today)   {base:>10,.0f} msg/s")
    print(
        f"  + traceparent                  {rates['traced']:>10,.0f} msg/s"
        f"   ({(rates['traced'] / base - 1) * 100:+.0f}% vs today)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(5_000 if args.quick else 50_000))


if __name__ == "__main__":
    main()
