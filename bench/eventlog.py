"""Event store throughput beside raw nats-py JetStream, measured in the same run.

Prints, for each durability setting (`sync_interval: always`, our default, and the
server's default), the append rate one at a time and pipelined (many games appending at
once), and the replay rate of one stored stream, each with its raw JetStream counterpart
and the ratio. Usage: python bench/eventlog.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import nats
from nats.js.api import DeliverPolicy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Timer, nats_server, rate, row

from boulevard.eventlog.jetstream import JetStreamEventStore, encode_commit
from boulevard.eventlog.store import NewEvent
from boulevard.messaging.streams import StreamSpec, ensure_stream

PAYLOAD = b"x" * 200  # about the size of a game event envelope


async def raw_sequential(js: nats.js.JetStreamContext, n: int) -> float:
    with Timer() as t:
        for i in range(n):
            await js.publish("raw.seq", PAYLOAD, headers={"Nats-Msg-Id": f"rs{i}"})
    return rate(n, t.seconds)


async def raw_pipelined(js: nats.js.JetStreamContext, n: int, window: int) -> float:
    with Timer() as t:
        pending = []
        for i in range(n):
            pending.append(
                await js.publish_async(
                    f"raw.p.{i % 256}", PAYLOAD, headers={"Nats-Msg-Id": f"rp{i}"}
                )
            )
            if len(pending) >= window:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    return rate(n, t.seconds)


async def raw_replay(nc: nats.NATS, subject: str, n: int) -> float:
    js = nc.jetstream()
    done = asyncio.get_running_loop().create_future()
    count = 0

    async def cb(msg: object) -> None:
        nonlocal count
        count += 1
        if count >= n and not done.done():
            done.set_result(None)

    with Timer() as t:
        sub = await js.subscribe(
            subject,
            cb=cb,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            pending_msgs_limit=1_000_000,
        )
        await done
    await sub.unsubscribe()
    return rate(n, t.seconds)


async def store_as_appends(js: nats.js.JetStreamContext, subject: str, n: int, per: int) -> None:
    """Write what `append` would write for n events in appends of `per`, pipelined (the
    store itself must wait for each ack, and a 100k-event build would dominate the run)."""
    last = (await js.stream_info("GAMES")).state.last_seq
    pending = []
    for k in range(n // per):
        evs = [NewEvent(f"{subject}-{k}-{i}", "Thing", PAYLOAD) for i in range(per)]
        headers = {
            "Nats-Msg-Id": evs[0].event_id,
            "Nats-Expected-Last-Subject-Sequence": str(0 if k == 0 else last + k),
        }
        data = encode_commit(evs, k * per + 1)
        pending.append(await js.publish_async(subject, data, headers=headers))
    await asyncio.gather(*pending)


async def ours_sequential(store: JetStreamEventStore, n: int) -> float:
    with Timer() as t:
        for i in range(n):
            await store.append("seq", [NewEvent(f"s{i}", "Thing", PAYLOAD)], i)
    return rate(n, t.seconds)


async def ours_pipelined(store: JetStreamEventStore, n: int, games: int) -> float:
    per_game = n // games

    async def play(g: int) -> None:
        for i in range(per_game):
            await store.append(f"g{g}", [NewEvent(f"g{g}-{i}", "Thing", PAYLOAD)], i)

    with Timer() as t:
        await asyncio.gather(*(play(g) for g in range(games)))
    return rate(per_game * games, t.seconds)


async def ours_batched(store: JetStreamEventStore, n: int, games: int, batch: int) -> float:
    per_game = n // games // batch

    async def play(g: int) -> None:
        version = 0
        for i in range(per_game):
            evs = [NewEvent(f"b{g}-{i}-{k}", "Thing", PAYLOAD) for k in range(batch)]
            version = await store.append(f"b{g}", evs, version)

    with Timer() as t:
        await asyncio.gather(*(play(g) for g in range(games)))
    return rate(per_game * games * batch, t.seconds)


async def run(sync_always: bool, quick: bool) -> None:
    seq_n = 500 if quick else 3000
    pipe_n = 5000 if quick else 30000
    replay_n = 20000 if quick else 100000
    label = "sync_interval: always" if sync_always else "server default sync (2 min)"
    print(f"\n{label}")
    with nats_server(sync_always) as server:
        nc = await server.connect()
        js = nc.jetstream()
        await ensure_stream(js, StreamSpec("RAW", ("raw.>",)))
        await ensure_stream(js, StreamSpec("GAMES", ("game.>",)))
        store = JetStreamEventStore(nc, "GAMES", "game")

        raw_seq = await raw_sequential(js, seq_n)
        our_seq = await ours_sequential(store, seq_n)
        print(row("append, one at a time", our_seq, raw_seq))

        raw_pipe = await raw_pipelined(js, pipe_n, 256)
        our_pipe = await ours_pipelined(store, pipe_n, 256)
        print(row("append, pipelined (256 games at once)", our_pipe, raw_pipe))
        our_batch = await ours_batched(store, pipe_n, 64, 8)
        print(row("append, 8-event batches x 64 games", our_batch, raw_pipe))

        # Replay. The raw stream: replay_n bare messages. Ours: the same number of events
        # stored exactly as append() stores them, one event per message (the worst case for
        # us: every command appended alone), and then eight events per message.
        pending = [await js.publish_async("raw.replay", PAYLOAD) for _ in range(replay_n)]
        await asyncio.gather(*pending)
        raw_rep = await raw_replay(nc, "raw.replay", replay_n)
        await store_as_appends(js, "game.replay1", replay_n, 1)
        with Timer() as t:
            got = await store.read("replay1")
        assert len(got) == replay_n and got[-1].version == replay_n
        ours1 = rate(replay_n, t.seconds)
        print(row(f"replay {replay_n:,} events, 1 per append", ours1, raw_rep))
        # The same messages read raw: what nats-py costs for the two headers every append
        # must carry (Nats-Msg-Id, Nats-Expected-Last-Subject-Sequence), before our code.
        raw_same = await raw_replay(nc, "game.replay1", replay_n)
        print(row("  same, vs raw messages with those 2 headers", ours1, raw_same))
        await store_as_appends(js, "game.replay8", replay_n, 8)
        with Timer() as t:
            got = await store.read("replay8")
        assert len(got) == replay_n and got[-1].version == replay_n
        print(row(f"replay {replay_n:,} events, 8 per append", rate(replay_n, t.seconds), raw_rep))
        await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smaller counts (seconds, not minutes)"
    )
    args = parser.parse_args()
    print("event store vs raw JetStream (nats-py), same server, same run")
    asyncio.run(run(True, args.quick))
    asyncio.run(run(False, args.quick))


if __name__ == "__main__":
    main()
