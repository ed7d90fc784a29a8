"""One SubmitAction is one trace: the client's call, the engine serving it, the engine's
append to GAMES and its request to the dice service over NATS, and the dice service
answering it, each span the child of the one before (in-memory exporter, real nats-server,
engine and dice in-process). With tracing off, no trace header is ever put on a message."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import nats
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.platform import tracing
from boulevard.platform.server import RunningService, start_service
from boulevard.seats.signing import signed_submit
from services.dice.app import DiceApp
from services.engine.app import EngineApp
from services.engine.settings import EngineSettings
from tests.integration.dice.support import dice_settings
from tests.support.identity import jwks_path, mint
from tests.support.keys import seat_key
from tests.support.nats import TestNats

pytestmark = pytest.mark.integration

OPERATOR = mint("trace-operator", ("operator",), ttl=3600)
SUBMIT = "/boulevard.v1.EngineService/SubmitAction"

_exporter = InMemorySpanExporter()
_provider = TracerProvider()
_provider.add_span_processor(SimpleSpanProcessor(_exporter))


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    tracing.enable(_provider)
    _exporter.clear()
    try:
        yield _exporter
    finally:
        tracing.disable()


async def platform(server: TestNats, data: Path) -> tuple[RunningService, RunningService]:
    nats_url = server.url
    ds = dice_settings(nats_url, data / "dice", nats_identities_dir=server.identities_dir)
    dice = await start_service(DiceApp(ds), ds, port=0)
    es = EngineSettings(
        NATS_URL=nats_url,
        data_dir=data / "engine",
        token_key="t" * 64,
        auth_jwks=jwks_path(),
        nats_identities_dir=server.identities_dir,
        log_format="console",
        shutdown_grace_seconds=1.0,
    )  # type: ignore[call-arg]
    engine = await start_service(EngineApp(es), es, port=0)
    return dice, engine


async def submit_one_move(channel: grpc.aio.Channel) -> None:
    """Create a Las Vegas game and make the first legal move (the next roll follows)."""
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
        metadata=(("authorization", f"Bearer {OPERATOR}"),),
    )
    for seat, token in enumerate(created.player_tokens):
        legal = await engine.ListLegalActions(
            engine_pb2.ListLegalActionsRequest(game_id=created.game_id, player_token=token)
        )
        if legal.actions:
            _exporter.clear()  # from here on: the one SubmitAction
            await engine.SubmitAction(
                signed_submit(
                    created.game_id,
                    token,
                    seat,
                    seat_key(seat),
                    legal.actions[0],
                    legal.version,
                    uuid.uuid4().hex,
                )
            )
            return
    raise AssertionError("nobody may move")


def one(spans: list[ReadableSpan], name: str, kind: SpanKind) -> ReadableSpan:
    found = [s for s in spans if s.name == name and s.kind == kind]
    assert found, f"no {kind.name} span {name!r} in {[(s.name, s.kind.name) for s in spans]}"
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def ancestors(span: ReadableSpan, spans: list[ReadableSpan]) -> list[int]:
    by_id = {s.context.span_id: s for s in spans}
    chain, current = [], span
    while (pid := parent_of(current)) is not None and pid in by_id:
        chain.append(pid)
        current = by_id[pid]
    return chain


async def test_a_submit_action_is_one_trace_through_engine_and_dice(
    nats_server: TestNats, tmp_path: Path, traced: InMemorySpanExporter
) -> None:
    dice, engine = await platform(nats_server, tmp_path)
    try:
        async with grpc.aio.insecure_channel(
            engine.address, interceptors=tracing.client_interceptors()
        ) as channel:
            await submit_one_move(channel)
        await asyncio.sleep(0.2)  # the dice server span ends just after its reply
    finally:
        await engine.stop()
        await dice.stop()
    spans = list(traced.get_finished_spans())
    client = one(spans, SUBMIT, SpanKind.CLIENT)
    server = one(spans, SUBMIT, SpanKind.SERVER)
    append = one(spans, "games.append", SpanKind.INTERNAL)
    ask = one(spans, "dice.rpc.roll", SpanKind.CLIENT)
    answer = one(spans, "dice.rpc.roll", SpanKind.SERVER)
    trace_id = client.context.trace_id
    assert {s.context.trace_id for s in (server, append, ask, answer)} == {trace_id}
    assert parent_of(server) == client.context.span_id  # traceparent in gRPC metadata
    assert server.context.span_id in ancestors(append, spans)
    assert server.context.span_id in ancestors(ask, spans)
    assert parent_of(answer) == ask.context.span_id  # traceparent in the NATS headers
    assert answer.attributes is not None
    assert answer.attributes["messaging.destination.name"] == "dice.rpc.roll"
    assert append.attributes is not None and append.attributes["events"] >= 1


async def test_with_tracing_off_no_message_carries_a_header(
    nats_server: TestNats, tmp_path: Path
) -> None:
    """Off is free: the engine's dice requests go without headers (and GAMES never has
    trace headers, on or off)."""
    assert not tracing.enabled()
    spy = await nats_server.connect()
    seen: list[dict[str, str] | None] = []

    async def record(msg: nats.aio.msg.Msg) -> None:
        seen.append(msg.headers)

    await spy.subscribe("dice.rpc.*", cb=record)
    dice, engine = await platform(nats_server, tmp_path)
    try:
        async with grpc.aio.insecure_channel(engine.address) as channel:
            await submit_one_move(channel)
        await asyncio.sleep(0.2)
    finally:
        await engine.stop()
        await dice.stop()
        await spy.close()
    assert seen and all(h is None for h in seen)


async def test_with_tracing_on_only_dice_requests_carry_trace_context(
    nats_server: TestNats, tmp_path: Path, traced: InMemorySpanExporter
) -> None:
    spy = await nats_server.connect()
    dice_headers: list[dict[str, str] | None] = []

    async def record(msg: nats.aio.msg.Msg) -> None:
        dice_headers.append(msg.headers)

    await spy.subscribe("dice.rpc.*", cb=record)
    dice, engine = await platform(nats_server, tmp_path)
    try:
        async with grpc.aio.insecure_channel(
            engine.address, interceptors=tracing.client_interceptors()
        ) as channel:
            await submit_one_move(channel)
        await asyncio.sleep(0.2)
        js = spy.jetstream()
        info = await js.stream_info("GAMES")
        assert info.state.messages > 0
        for seq in range(1, info.state.last_seq + 1):
            stored = await js.get_msg("GAMES", seq)
            assert "traceparent" not in (stored.headers or {})
    finally:
        await engine.stop()
        await dice.stop()
        await spy.close()
    assert dice_headers and all(h and "traceparent" in h for h in dice_headers)
