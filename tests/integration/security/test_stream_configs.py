"""A stream's configuration is no way around the NATS permissions.

Subject permissions say who may publish where and read what, but a JetStream stream works
inside the account, past them: a stream captures whatever is published on its subjects,
republishes what it stores to any subject, and sources any other stream of the account. So
an identity that could update its own stream could read and write anything: matchmaking,
updating its `ratings` bucket, republished a value it wrote into `game.<id>` (a forged game
event that the ledger would post), sourced the dice seeds and the engine's snapshots into
its `tickets` bucket, and captured the engine's inbox (the dice service's answers). Only
`admin` updates streams now; a service creates a missing stream and checks an existing one,
refusing to start on one made to capture, republish or source."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig, RePublish, StreamSource

from boulevard.messaging.identities import SERVICE_IDENTITIES, inbox_prefix
from boulevard.messaging.streams import StreamMismatch, ensure_stream, platform_streams
from boulevard.platform.settings import Settings
from tests.support.nats import TestNats, provisioned_nats

pytestmark = pytest.mark.integration

SPECS = platform_streams(Settings())
# Every stream each service identity owns (and used to be allowed to update).
OWNED = {
    "engine": ["GAMES", "KV_engine_snapshots", "KV_engine_games"],
    "dice": ["DICE", "KV_dice_seeds"],
    "ledger": ["LEDGER", "KV_ledger_checkpoint"],
    "matchmaking": ["MATCHMAKING", "KV_tickets", "KV_matches", "KV_ratings"],
}
BUCKETS = [s.removeprefix("KV_") for streams in OWNED.values() for s in streams if "KV_" in s]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNats]:
    with provisioned_nats(tmp_path_factory.mktemp("configs") / "nats", provision) as handle:
        yield handle


async def provision(server: TestNats) -> None:
    admin = await server.connect()
    try:
        js = admin.jetstream()
        for spec in SPECS.values():
            await ensure_stream(js, spec)
        for bucket in BUCKETS:
            await js.create_key_value(KeyValueConfig(bucket=bucket, history=1))
        await (await js.key_value("dice_seeds")).put("g1", b"a sealed seed")
        await (await js.key_value("engine_snapshots")).put("g1", b"a snapshot: the deck")
        await js.publish("game.g1", b"the real first event")
    finally:
        await admin.close()


@pytest.fixture
async def admin(server: TestNats) -> AsyncIterator[NATS]:
    nc = await server.connect()
    yield nc
    await nc.close()


async def api(nc: NATS, subject: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """A JetStream API request; None when the server refused it (a permissions violation
    gets no answer)."""
    try:
        reply = await nc.request(subject, json.dumps(body).encode(), timeout=1)
    except nats.errors.TimeoutError:
        return None
    answer: dict[str, Any] = json.loads(reply.data)
    return answer


def hostile(config: dict[str, Any], stream: str) -> list[dict[str, Any]]:
    """What an owner would do with its stream: capture another's inbox and dice requests,
    republish into the game log, source another service's bucket."""
    capture = dict(config, subjects=[*config["subjects"], "_INBOX.engine.>", "dice.rpc.>"])
    source = "KV_engine_snapshots" if stream != "KV_engine_snapshots" else "KV_dice_seeds"
    return [
        capture,
        dict(config, republish={"src": config["subjects"][0], "dest": "game.g1"}),
        dict(config, sources=[{"name": source}]),
    ]


@pytest.mark.parametrize(
    ("identity", "stream"), [(i, s) for i, streams in OWNED.items() for s in streams]
)
async def test_no_service_reconfigures_even_its_own_stream(
    server: TestNats, admin: NATS, identity: str, stream: str
) -> None:
    before = (await admin.jetstream().stream_info(stream)).config
    client = await server.connect(identity, allow_reconnect=False)
    try:
        info = await api(client, f"$JS.API.STREAM.INFO.{stream}", {})
        assert info is not None and "config" in info, info  # it still reads its stream
        # All three at once: each refusal is a 1 s wait for an answer that never comes.
        update = f"$JS.API.STREAM.UPDATE.{stream}"
        answers = await asyncio.gather(
            *(api(client, update, config) for config in hostile(info["config"], stream))
        )
        assert answers == [None, None, None], f"{identity} reconfigured {stream}: {answers}"
    finally:
        await client.close()
    assert (await admin.jetstream().stream_info(stream)).config == before


async def test_matchmaking_cannot_forge_a_game_event_through_a_republish(
    server: TestNats, admin: NATS
) -> None:
    games = admin.jetstream()
    before = (await games.stream_info("GAMES")).state.messages
    mm = await server.connect("matchmaking", allow_reconnect=False)
    try:
        info = await api(mm, "$JS.API.STREAM.INFO.KV_ratings", {})
        assert info is not None
        config = dict(info["config"], republish={"src": "$KV.ratings.x", "dest": "game.g1"})
        await api(mm, "$JS.API.STREAM.UPDATE.KV_ratings", config)
        await mm.jetstream().publish("$KV.ratings.x", b'{"forged": "GambleSettled"}', timeout=2)
    finally:
        await mm.close()
    await asyncio.sleep(0.2)
    assert (await games.stream_info("GAMES")).state.messages == before


async def test_nobody_reads_the_engines_replies_through_a_stream(nats_server: TestNats) -> None:
    admin = await nats_server.connect()  # a server of its own: no earlier test's changes
    await admin.jetstream().create_key_value(KeyValueConfig(bucket="tickets", history=1))
    dice = await nats_server.connect("dice", allow_reconnect=False)
    engine = await nats_server.connect("engine", allow_reconnect=False)
    mm = await nats_server.connect("matchmaking", allow_reconnect=False)
    try:

        async def answer(msg: nats.aio.msg.Msg) -> None:
            await msg.respond(b"the next roll")

        await dice.subscribe("dice.rpc.>", queue="dice", cb=answer)
        await dice.flush()
        info = await api(mm, "$JS.API.STREAM.INFO.KV_tickets", {})
        assert info is not None
        config = dict(info["config"], max_msgs_per_subject=-1)
        config["subjects"] = [*config["subjects"], f"{inbox_prefix('engine')}.>"]
        await api(mm, "$JS.API.STREAM.UPDATE.KV_tickets", config)
        reply = await engine.request("dice.rpc.roll", b"{}", timeout=2)
        assert reply.data == b"the next roll"
        state = (await admin.jetstream().stream_info("KV_tickets", subjects_filter=">")).state
    finally:
        for nc in (dice, engine, mm, admin):
            await nc.close()
    assert not any(s.startswith("_INBOX") for s in state.subjects or {}), state.subjects


@pytest.mark.parametrize("identity", SERVICE_IDENTITIES)
async def test_nobody_sources_another_services_bucket(
    server: TestNats, admin: NATS, identity: str
) -> None:
    stream = OWNED[identity][-1]
    client = await server.connect(identity, allow_reconnect=False)
    try:
        info = await api(client, f"$JS.API.STREAM.INFO.{stream}", {})
        assert info is not None
        for source in ("KV_dice_seeds", "KV_engine_snapshots"):
            if source in OWNED[identity]:
                continue
            config = dict(info["config"], sources=[{"name": source}])
            await api(client, f"$JS.API.STREAM.UPDATE.{stream}", config)
    finally:
        await client.close()
    await asyncio.sleep(0.2)
    config = (await admin.jetstream().stream_info(stream)).config
    assert not config.sources


# A stream someone made otherwise before the service started


@pytest.mark.parametrize(
    "change",
    [
        {"subjects": ["game.>", "_INBOX.engine.>"]},
        {"republish": RePublish(src="game.>", dest="ledger.forged.>")},
        {"sources": [StreamSource(name="KV_dice_seeds")]},
        {"max_msgs": 10},
        {"deny_delete": False},
    ],
    ids=["captures", "republishes", "sources", "shrunk", "deletable"],
)
async def test_a_service_refuses_a_stream_made_to_capture_republish_or_source(
    nats_server: TestNats, change: dict[str, Any]
) -> None:
    spec = SPECS["games"]
    admin = await nats_server.connect()
    try:
        config = spec.config()
        for name, value in change.items():
            setattr(config, name, value)
        await admin.jetstream().add_stream(config)
    finally:
        await admin.close()
    for identity in ("engine", "ledger"):  # the owner and a reader
        client = await nats_server.connect(identity)
        try:
            with pytest.raises(StreamMismatch, match="GAMES"):
                await ensure_stream(client.jetstream(), spec)
        finally:
            await client.close()


async def test_a_service_creates_a_missing_stream_and_accepts_its_own(
    nats_server: TestNats,
) -> None:
    for identity, name in (("dice", "games"), ("engine", "games"), ("engine", "matchmaking")):
        client = await nats_server.connect(identity)
        try:
            await ensure_stream(client.jetstream(), SPECS[name])  # made, or found as made
        finally:
            await client.close()
    admin = await nats_server.connect()
    try:
        config = (await admin.jetstream().stream_info("GAMES")).config
        assert config.subjects == ["game.>"] and config.deny_delete and config.deny_purge
    finally:
        await admin.close()
