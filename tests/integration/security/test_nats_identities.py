"""A hostile neighbour on NATS (issue 11, "NATS is open"): the test nats-server runs the
generated configuration that `boulevard up` and deploy/ use. An anonymous client or an
unknown key is refused; each identity tries everything it must not do and is refused, and
each owner still can do its own part (so a server that refused everything fails here)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import nats
import nkeys
import pytest
from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig

from boulevard.api.v1 import events_pb2
from boulevard.messaging.identities import IDENTITIES, SERVICE_IDENTITIES, inbox_prefix
from boulevard.messaging.requests import Requests
from boulevard.messaging.streams import ensure_stream, platform_streams
from boulevard.platform.settings import Settings
from tests.support.nats import TestNats, provisioned_nats

pytestmark = pytest.mark.integration

BUCKETS = {
    "engine": ("engine_snapshots", "engine_games"),
    "dice": ("dice_seeds",),
    "matchmaking": ("tickets", "matches", "ratings"),
    "ledger": ("ledger_checkpoint",),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNats]:
    with provisioned_nats(tmp_path_factory.mktemp("hostile") / "nats", provision) as handle:
        yield handle


async def provision(server: TestNats) -> None:
    """The platform's streams and buckets, as the services make them, plus the ledger's
    durable consumer on GAMES (a target: nobody else may pull, ack or delete it)."""
    admin = await server.connect()
    try:
        js = admin.jetstream()
        for spec in platform_streams(Settings()).values():
            await ensure_stream(js, spec)
        for buckets in BUCKETS.values():
            for bucket in buckets:
                await js.create_key_value(KeyValueConfig(bucket=bucket, history=1))
        await js.add_consumer("GAMES", durable_name="ledger", filter_subject="game.>")
        await js.publish("game.g1", b"the real first event")
    finally:
        await admin.close()


@dataclass
class Client:
    """A connection as one identity that records what the server refused."""

    nc: NATS
    errors: list[str]

    async def refused(self, what: str, within: float = 2.0) -> bool:
        """Whether the server answered with a permissions violation naming `what`."""
        await self.nc.flush()
        deadline = asyncio.get_running_loop().time() + within
        needle = what.lower()
        while asyncio.get_running_loop().time() < deadline:
            if any("permissions violation" in e and needle in e for e in self.errors):
                return True
            await asyncio.sleep(0.02)
        return False


@pytest.fixture
async def connect(server: TestNats) -> AsyncIterator[Callable[[str], Awaitable[Client]]]:
    opened: list[NATS] = []

    async def as_identity(identity: str) -> Client:
        errors: list[str] = []

        async def on_error(exc: Exception) -> None:
            errors.append(str(exc).lower())  # nats-py lowercases the server's -ERR anyway

        nc = await server.connect(identity, error_cb=on_error, allow_reconnect=False)
        opened.append(nc)
        return Client(nc, errors)

    yield as_identity
    for nc in opened:
        await nc.close()


async def unanswered(request: Awaitable[object], within: float = 1.0) -> bool:
    """Whether `request` got no answer within `within` seconds (an answer, even an error,
    is an answer: its exception propagates)."""
    try:
        await asyncio.wait_for(request, within)
    except TimeoutError:  # nats-py's own TimeoutError is one too
        return True
    return False


async def count(server: TestNats, stream: str, subject: str | None = None) -> int:
    admin = await server.connect()
    try:
        info = await admin.jetstream().stream_info(stream, subjects_filter=subject)
        if subject is None:
            return int(info.state.messages)
        return int((info.state.subjects or {}).get(subject, 0))
    finally:
        await admin.close()


# Who gets in


async def test_an_anonymous_client_is_refused(server: TestNats) -> None:
    with pytest.raises(Exception, match=r"(?i)authorization violation"):
        await nats.connect(server.url, allow_reconnect=False, connect_timeout=2)


async def test_a_key_the_server_does_not_know_is_refused(server: TestNats) -> None:
    stranger = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()
    with pytest.raises(Exception, match=r"(?i)authorization violation"):
        await nats.connect(
            server.url, nkeys_seed_str=stranger, allow_reconnect=False, connect_timeout=2
        )


async def test_a_password_user_or_a_token_gets_no_further(server: TestNats) -> None:
    host = server.url.removeprefix("nats://")
    for url in (f"nats://engine:engine@{host}", f"nats://admin@{host}"):
        with pytest.raises(Exception, match=r"(?i)authorization violation"):
            await nats.connect(url, allow_reconnect=False, connect_timeout=2)


@pytest.mark.parametrize("identity", IDENTITIES)
async def test_every_identity_gets_in_with_its_own_seed(server: TestNats, identity: str) -> None:
    nc = await server.connect(identity, allow_reconnect=False)
    assert nc.is_connected
    await nc.close()
    assert server.seed_file(identity).stat().st_mode & 0o777 == 0o600


# The game log: a forged GambleSettled


def forged_gamble(game_id: str) -> bytes:
    """What the attacker stored in issue 11: a GambleSettled paying $1,000,000 to seat 0."""
    envelope = events_pb2.EventEnvelope(game_id=game_id, event_id="forged", version=2)
    envelope.payload = b'{"type":"GambleSettled","seat":0,"amount":1000000}'
    return envelope.SerializeToString()


@pytest.mark.parametrize("identity", ["dice", "ledger", "matchmaking"])
async def test_only_the_engine_writes_the_game_log(
    server: TestNats, connect: Callable[[str], Awaitable[Client]], identity: str
) -> None:
    before = await count(server, "GAMES", "game.g1")
    attacker = await connect(identity)
    await attacker.nc.publish("game.g1", forged_gamble("g1"))
    assert await attacker.refused('publish to "game.g1"')
    assert await count(server, "GAMES", "game.g1") == before


async def test_the_engine_does_write_the_game_log(
    server: TestNats, connect: Callable[[str], Awaitable[Client]]
) -> None:
    engine = await connect("engine")
    ack = await engine.nc.jetstream().publish("game.g2", b"a move", timeout=5)
    assert ack.stream == "GAMES"
    assert not engine.errors


# The engine's snapshots and games index


@pytest.mark.parametrize("identity", ["dice", "ledger", "matchmaking"])
@pytest.mark.parametrize("bucket", BUCKETS["engine"])
async def test_only_the_engine_writes_its_buckets(
    server: TestNats, connect: Callable[[str], Awaitable[Client]], identity: str, bucket: str
) -> None:
    attacker = await connect(identity)
    await attacker.nc.publish(f"$KV.{bucket}.g1", b"a forged snapshot")
    assert await attacker.refused(f'publish to "$kv.{bucket}.g1"')
    assert await count(server, f"KV_{bucket}", f"$KV.{bucket}.g1") == 0


async def test_the_engine_does_write_its_snapshots(
    connect: Callable[[str], Awaitable[Client]],
) -> None:
    engine = await connect("engine")
    kv = await engine.nc.jetstream().key_value("engine_snapshots")
    assert await kv.put("g2", b"a real snapshot") > 0


async def test_matchmaking_follows_the_games_index_and_cannot_make_or_write_it(
    connect: Callable[[str], Awaitable[Client]],
) -> None:
    """The ratings feed reads the engine's games index with a durable of its own; it may
    not write the index, nor make its stream (a bucket is opened as found: made first by
    matchmaking, with sources or a republish, it would be the engine's index no more)."""
    engine = await connect("engine")
    await (await engine.nc.jetstream().key_value("engine_games")).put("gi", b'{"status": "x"}')
    mm = await connect("matchmaking")
    js = mm.nc.jetstream(timeout=2)
    sub = await js.pull_subscribe(
        "$KV.engine_games.gi", durable="matchmaking-finished", stream="KV_engine_games"
    )
    [msg] = await sub.fetch(1, timeout=5)
    assert msg.data == b'{"status": "x"}'
    await msg.ack()
    made = {"name": "KV_engine_games", "subjects": ["$KV.engine_games.>"], "sources": [
        {"name": "KV_tickets"}]}  # fmt: skip
    for subject, body in [
        ("$KV.engine_games.gi", b'{"status": "finished"}'),
        ("$JS.API.STREAM.CREATE.KV_engine_games", json.dumps(made).encode()),
    ]:
        await mm.nc.publish(subject, body, reply=f"{inbox_prefix('matchmaking')}.x")
        assert await mm.refused(f'publish to "{subject.lower()}"'), subject
    # Its read of the old feed's position on GAMES (once, at upgrade) is allowed.
    await mm.nc.publish(
        "$JS.API.CONSUMER.INFO.GAMES.matchmaking-ratings",
        b"",
        reply=f"{inbox_prefix('matchmaking')}.y",
    )
    assert not await mm.refused("consumer.info.games.matchmaking-ratings", within=0.3)


@pytest.mark.parametrize("identity", ["engine", "dice", "ledger"])
@pytest.mark.parametrize(
    ("stream", "durable"),
    [("KV_engine_games", "matchmaking-finished"), ("GAMES", "matchmaking-ratings")],
)
async def test_nobody_else_pulls_acks_or_deletes_the_ratings_feeds_consumers(
    connect: Callable[[str], Awaitable[Client]], identity: str, stream: str, durable: str
) -> None:
    """Taking the feed's messages would leave games unrated; moving the old feed's ack
    floor before an upgrade would make the new feed leave games as rated."""
    client = await connect(identity)
    for subject in [
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.API.CONSUMER.DELETE.{stream}.{durable}",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.1.1.1.1.1",
    ]:
        await client.nc.publish(subject, b"{}")
        assert await client.refused(f'publish to "{subject.lower()}"'), (identity, subject)


# Dice: only the engine asks, only dice answers


@pytest.mark.parametrize("identity", ["dice", "ledger", "matchmaking"])
@pytest.mark.parametrize("op", ["roll", "reveal", "open", "head"])
async def test_only_the_engine_asks_for_dice(
    connect: Callable[[str], Awaitable[Client]], identity: str, op: str
) -> None:
    dice = await connect("dice")
    asked: list[str] = []

    async def on_request(msg: nats.aio.msg.Msg) -> None:
        asked.append(msg.subject)

    await dice.nc.subscribe("dice.rpc.>", cb=on_request)
    await dice.nc.flush()
    attacker = await connect(identity)
    await attacker.nc.publish(f"dice.rpc.{op}", b"{}", reply=f"{inbox_prefix(identity)}.x")
    assert await attacker.refused(f'publish to "dice.rpc.{op}"')
    await asyncio.sleep(0.1)
    assert asked == []


@pytest.mark.parametrize("identity", ["engine", "ledger", "matchmaking"])
async def test_nobody_but_dice_can_answer_the_engine_with_made_up_rolls(
    connect: Callable[[str], Awaitable[Client]], identity: str
) -> None:
    attacker = await connect(identity)
    heard: list[str] = []

    async def answer(msg: nats.aio.msg.Msg) -> None:
        heard.append(msg.subject)
        await msg.respond(b"[6, 6]")

    await attacker.nc.subscribe("dice.rpc.>", cb=answer)
    assert await attacker.refused('subscription to "dice.rpc.>"')
    engine = await connect("engine")
    with pytest.raises(nats.errors.NoRespondersError):
        await engine.nc.request("dice.rpc.roll", b"{}", timeout=1)
    assert heard == []


async def test_dice_answers_the_engine_and_nobody_reads_the_answer_on_the_way(
    connect: Callable[[str], Awaitable[Client]],
) -> None:
    dice = await connect("dice")

    async def answer(msg: nats.aio.msg.Msg) -> None:
        await msg.respond(b"the next roll")

    await dice.nc.subscribe("dice.rpc.>", queue="dice", cb=answer)
    await dice.nc.flush()
    snoopers = {}
    for identity in ("ledger", "matchmaking", "dice"):
        snooper = await connect(identity)
        await snooper.nc.subscribe("_INBOX.>")
        await snooper.nc.subscribe(f"{inbox_prefix('engine')}.>")
        snoopers[identity] = snooper
    for identity, snooper in snoopers.items():
        assert await snooper.refused('subscription to "_inbox.>"'), identity
        assert await snooper.refused('subscription to "_inbox.engine.>"'), identity
    engine = await connect("engine")
    reply = await engine.nc.request("dice.rpc.roll", b"{}", timeout=2)
    assert reply.data == b"the next roll"
    # The engine's own request path (boulevard.messaging.requests) replies in its inbox too.
    reply = await Requests(engine.nc).request("dice.rpc.roll", b"{}", 2.0)
    assert reply.data == b"the next roll"
    # Dice may answer a request it received, not publish into the engine's inbox at will.
    await dice.nc.publish(f"{inbox_prefix('engine')}.forged", b"[6, 6]")
    assert await dice.refused('publish to "_inbox.engine.forged"')


# The other evidence: dice records and seeds, the ledger, matchmaking


WRITES = {
    "dice": ["dice.g1", "$KV.dice_seeds.g1"],
    "ledger": ["ledger.head", "ledger.entry.g1", "$KV.ledger_checkpoint.manifest"],
    "matchmaking": ["mm.match_formed", "$KV.tickets.t1", "$KV.matches.m1", "$KV.ratings.p1"],
}


@pytest.mark.parametrize(
    ("owner", "subject"), [(o, s) for o, subjects in WRITES.items() for s in subjects]
)
async def test_only_the_owner_writes_its_evidence(
    connect: Callable[[str], Awaitable[Client]], owner: str, subject: str
) -> None:
    for identity in SERVICE_IDENTITIES:
        if identity == owner:
            continue
        attacker = await connect(identity)
        await attacker.nc.publish(subject, b"forged")
        assert await attacker.refused(f'publish to "{subject.lower()}"'), identity
    writer = await connect(owner)
    await writer.nc.publish(subject, b"its own")
    assert not await writer.refused(subject, within=0.3)


@pytest.mark.parametrize("identity", ["engine", "dice", "matchmaking"])
async def test_only_the_ledger_reads_or_changes_its_checkpoint(
    connect: Callable[[str], Awaitable[Client]], identity: str
) -> None:
    """The checkpoint is the state the ledger resumes from (every balance, every posted
    key): no other service may read it, write it, follow it or reconfigure its bucket.
    (The ledger checks it against LEDGER anyway: tests/integration/ledger/test_checkpoint.py.)"""
    stream, key = "KV_ledger_checkpoint", "$KV.ledger_checkpoint.manifest"
    attempts = [
        (key, b"a forged checkpoint"),
        (f"$JS.API.DIRECT.GET.{stream}.{key}", b""),
        (f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps({"last_by_subj": key}).encode()),
        (f"$JS.API.STREAM.INFO.{stream}", b""),
        (
            f"$JS.API.CONSUMER.CREATE.{stream}",
            json.dumps({"stream_name": stream, "config": {"filter_subject": key}}).encode(),
        ),
        (
            f"$JS.API.STREAM.UPDATE.{stream}",
            json.dumps({"name": stream, "subjects": ["$KV.ledger_checkpoint.>", "x.>"]}).encode(),
        ),
    ]
    attacker = await connect(identity)
    for subject, body in attempts:
        await attacker.nc.publish(subject, body, reply=f"{inbox_prefix(identity)}.cp")
        assert await attacker.refused(f'publish to "{subject.lower()}"'), subject
    ledger = await connect("ledger")
    kv = await ledger.nc.jetstream().key_value("ledger_checkpoint")
    await kv.put("probe", b"the ledger's own")
    assert (await kv.get("probe")).value == b"the ledger's own"


# Nobody destroys evidence or changes another's stream


DESTROY = [
    "$JS.API.STREAM.DELETE.GAMES",
    "$JS.API.STREAM.PURGE.GAMES",
    "$JS.API.STREAM.MSG.DELETE.GAMES",
    "$JS.API.STREAM.DELETE.LEDGER",
    "$JS.API.STREAM.PURGE.DICE",
    "$JS.API.STREAM.DELETE.KV_engine_snapshots",
    "$JS.API.STREAM.PURGE.KV_dice_seeds",
]


@pytest.mark.parametrize("identity", IDENTITIES)
async def test_nobody_deletes_or_purges_a_stream_or_a_message(
    server: TestNats, connect: Callable[[str], Awaitable[Client]], identity: str
) -> None:
    before = await count(server, "GAMES")
    client = await connect(identity)
    js = client.nc.jetstream(timeout=1)
    # A refused request gets no answer: each is given 1 s (nats-py's delete_msg would wait
    # 5 s whatever the context's timeout), all three at once.
    refusals = (js.delete_stream("GAMES"), js.purge_stream("GAMES"), js.delete_msg("GAMES", 1))
    assert await asyncio.gather(*(unanswered(r) for r in refusals)) == [True, True, True]
    for subject in DESTROY:
        await client.nc.publish(subject, b"{}")
        assert await client.refused(f'publish to "{subject.lower()}"'), subject
    assert await count(server, "GAMES") == before


@pytest.mark.parametrize(
    ("identity", "stream"),
    [("ledger", "GAMES"), ("matchmaking", "GAMES"), ("dice", "GAMES"), ("engine", "MATCHMAKING"),
     ("engine", "LEDGER"), ("matchmaking", "KV_engine_snapshots")],
)  # fmt: skip
async def test_only_the_owner_changes_a_streams_configuration(
    connect: Callable[[str], Awaitable[Client]], identity: str, stream: str
) -> None:
    client = await connect(identity)
    # Shrinking a stream to one message would discard the evidence without a purge.
    await client.nc.publish(f"$JS.API.STREAM.UPDATE.{stream}", b'{"max_msgs": 1}')
    assert await client.refused(f'publish to "$js.api.stream.update.{stream.lower()}"')


async def test_nobody_takes_over_the_ledgers_consumer(
    server: TestNats, connect: Callable[[str], Awaitable[Client]]
) -> None:
    """Pulling, acking, deleting or re-filtering the ledger's consumer would let money go
    unposted."""
    # An unnamed create names its consumer in the body, and the server treats one named
    # like an existing durable as an update of it: only identities that need unnamed
    # consumers on GAMES get that subject (the engine, the ledger itself).
    hijack = json.dumps(
        {"stream_name": "GAMES", "config": {"name": "ledger", "filter_subject": "game.none",
                                            "ack_policy": "explicit"}}
    ).encode()  # fmt: skip
    for identity in ("engine", "dice", "matchmaking"):
        client = await connect(identity)
        subjects = [
            "$JS.API.CONSUMER.MSG.NEXT.GAMES.ledger",
            "$JS.API.CONSUMER.DELETE.GAMES.ledger",
            "$JS.API.CONSUMER.DURABLE.CREATE.GAMES.ledger",
            "$JS.API.CONSUMER.CREATE.GAMES.ledger.game.>",
            "$JS.ACK.GAMES.ledger.1.1.1.1.1",
        ]
        if identity != "engine":
            subjects.append("$JS.API.CONSUMER.CREATE.GAMES")
        for subject in subjects:
            await client.nc.publish(subject, hijack)
            assert await client.refused(f'publish to "{subject.lower()}"'), (identity, subject)
    admin = await server.connect()
    try:
        info = await admin.jetstream().consumer_info("GAMES", "ledger")
        assert info.num_pending >= 1  # nobody took the ledger's messages
        assert info.config.filter_subject == "game.>"  # nor re-filtered its consumer
    finally:
        await admin.close()
