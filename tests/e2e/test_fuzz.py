"""Fuzz every RPC of the four services (issue 11): hypothesis-generated requests built from
the proto descriptors (real ids and tokens mixed with random text, out-of-range numbers,
unknown enum values, oversized strings), and raw random bytes through a generic channel
call, against the running platform (real processes on a real nats-server).

What must hold: no UNKNOWN or INTERNAL answer, every call ends within its deadline, every
service is still alive and SERVING afterwards, and no service's memory grew without bound.
UNAUTHENTICATED and PERMISSION_DENIED are fine answers (bearer-token checks on other
branches refuse much of this before it reaches a servicer)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boulevard.api.v1 import (
    dice_pb2,
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)
from tests.e2e.conftest import OPERATOR, Platform
from tests.support.keys import TEST_PUBLIC_KEY, seat_key
from tests.support.processes import SERVICES

pytestmark = pytest.mark.e2e

DEADLINE = 5.0  # seconds per call; a call that outlives it (plus slack) is a hang
SLACK = 3.0
EXAMPLES = 40  # generated requests per RPC; with raw bytes, about a minute for all of them
RAW_EXAMPLES = 8
RSS_GROWTH_LIMIT_KB = 150 * 1024
BAD = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}

SERVICE_OF_MODULE = {
    "engine": engine_pb2,
    "matchmaking": matchmaking_pb2,
    "dice": dice_pb2,
    "ledger": ledger_pb2,
}


def methods() -> list[tuple[str, MethodDescriptor]]:
    return [
        (name, method)
        for name, module in SERVICE_OF_MODULE.items()
        for service in module.DESCRIPTOR.services_by_name.values()
        for method in service.methods
    ]


def path_of(method: MethodDescriptor) -> str:
    return f"/{method.containing_service.full_name}/{method.name}"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


# ---- strategies built from descriptors ------------------------------------------------------

_INTS = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def scalar(field: FieldDescriptor, pool: Pool) -> st.SearchStrategy[Any]:
    t = field.type
    if t == FieldDescriptor.TYPE_STRING:
        good = pool.named.get(field.name)
        anything = st.one_of(
            st.sampled_from(pool.any),
            st.text(max_size=40),
            st.integers(0, 20_000).map(lambda n: "x" * n),  # around and far over the bounds
        )
        # Mostly a value that fits the field, so calls get past the first check.
        return anything if good is None else st.one_of(st.sampled_from(good), anything)
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=200)
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, allow_infinity=True, width=32)
    if t == FieldDescriptor.TYPE_ENUM:
        top = max(v.number for v in field.enum_type.values)
        return st.integers(-1, top + 2)  # proto3 enums are open: unknown values decode
    low, high = _INTS[t]
    return st.one_of(st.integers(-2, 12).filter(lambda n: low <= n <= high), st.integers(low, high))


def message_of(desc: Descriptor, pool: Pool, depth: int = 0) -> st.SearchStrategy[Message]:
    cls = message_factory.GetMessageClass(desc)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for f in desc.fields:
        is_map = f.message_type is not None and f.message_type.GetOptions().map_entry
        if f.message_type is not None and not is_map:
            if depth >= 4:
                continue
            one = message_of(f.message_type, pool, depth + 1)
        elif is_map:
            assert f.message_type is not None
            key = scalar(f.message_type.fields_by_name["key"], pool)
            value = scalar(f.message_type.fields_by_name["value"], pool)
            fields[f.name] = st.none() | st.dictionaries(key, value, max_size=4)
            continue
        else:
            one = scalar(f, pool)
        fields[f.name] = st.none() | (st.lists(one, max_size=4) if f.is_repeated else one)

    def build(values: dict[str, Any]) -> Message:
        msg = cls()
        for name, value in values.items():
            if value is None:
                continue
            field = desc.fields_by_name[name]
            target = getattr(msg, name) if field.is_repeated or field.message_type else None
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                target.update(value)
            elif field.is_repeated and field.message_type is not None:
                for item in value:
                    target.add().CopyFrom(item)
            elif field.is_repeated:
                target.extend(value)
            elif field.message_type is not None:
                target.CopyFrom(value)
            else:
                setattr(msg, name, value)
        return msg

    return st.fixed_dictionaries(fields).map(build)


# ---- the calls --------------------------------------------------------------------------------


def call(
    channel: grpc.Channel,
    method: MethodDescriptor,
    request: bytes,
    metadata: tuple[tuple[str, str], ...],
) -> grpc.StatusCode:
    """One call with raw request bytes; its status (a stream: after its first message)."""
    started = time.monotonic()
    code = grpc.StatusCode.OK
    try:
        if method.server_streaming:
            stream = channel.unary_stream(path_of(method))(
                request, timeout=DEADLINE, metadata=metadata
            )
            try:
                next(stream, None)
            finally:
                stream.cancel()
            code = stream.code() or grpc.StatusCode.OK
            if code == grpc.StatusCode.CANCELLED:
                code = grpc.StatusCode.OK  # we hung up after the first message
        else:
            channel.unary_unary(path_of(method))(request, timeout=DEADLINE, metadata=metadata)
    except grpc.RpcError as err:
        code = err.code()  # type: ignore[attr-defined]
        details = err.details()  # type: ignore[attr-defined]
        assert code not in BAD, f"{path_of(method)} answered {code}: {details}"
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            # A stream may wait for news that never comes; a unary call must answer.
            assert method.server_streaming, f"{path_of(method)} hung until its deadline"
        assert len(details or "") <= 600, f"{path_of(method)}: a {len(details)}-char message"
    elapsed = time.monotonic() - started
    assert elapsed < DEADLINE + SLACK, f"{path_of(method)} took {elapsed:.1f}s"
    return code


@dataclass
class Pool:
    named: dict[str, list[str]]  # field name -> values that fit it
    any: list[str]


def real_ids(platform: Platform) -> Pool:
    """Ids and tokens that exist, so generated requests also reach deep into the services."""
    with grpc.insecure_channel(platform.address("engine")) as channel:
        created = engine_pb2_grpc.EngineServiceStub(channel).CreateGame(
            engine_pb2.CreateGameRequest(
                request_id=uuid.uuid4().hex,
                game="las_vegas",
                seats=[
                    engine_pb2.SeatAssignment(
                        seat=i, player_id=f"fz{i}", public_key=seat_key(i).public_hex
                    )
                    for i in range(2)
                ],
            ),
            metadata=(("authorization", f"Bearer {OPERATOR}"),),
        )
    with grpc.insecure_channel(platform.address("matchmaking")) as channel:
        ticket = matchmaking_pb2_grpc.MatchmakingServiceStub(channel).CreateTicket(
            matchmaking_pb2.CreateTicketRequest(
                request_id="fz", player_id=f"fz-{uuid.uuid4().hex[:8]}", game="lords_of_vegas",
                public_key=TEST_PUBLIC_KEY,
                min_seats=4, max_seats=4,
            )
        ).ticket  # fmt: skip
    named = {
        "game_id": [created.game_id],
        "book": [created.game_id, "platform"],
        "player_token": list(created.player_tokens),
        "ticket_id": [ticket.ticket_id],
        "game": ["las_vegas", "lords_of_vegas"],
        "player_id": ["fz0", "fz1", ticket.player_id],
        "account": ["bank", "seat:0", "seat:1"],
        "lot": ["A1", "C12", "F9"],
        "die_from": ["A2"],
        "public_key": [TEST_PUBLIC_KEY, seat_key(0).public_hex],
    }
    return Pool(named, [
        "",
        created.game_id,
        *created.player_tokens,
        ticket.ticket_id,
        "las_vegas",
        "lords_of_vegas",
        "platform",
        "bank",
        "seat:0",
        "white_dice",
        "true",
        "A1",
        "C12",
        "1",
        "../../etc",
        "game.>",
        "\x00\ud7ff\U0001f3b2",
    ])  # fmt: skip


def test_fuzz_every_rpc(platform: Platform) -> None:
    pool = real_ids(platform)
    pids = {name: platform.services[name].process.pid for name in SERVICES}  # type: ignore[union-attr]
    before = {name: rss_kb(pid) for name, pid in pids.items()}
    channels = {name: grpc.insecure_channel(platform.address(name)) for name in SERVICES}
    operator = (("authorization", f"Bearer {OPERATOR}"),)
    codes: dict[str, set[grpc.StatusCode]] = {}
    try:
        for service, method in methods():
            channel = channels[service]
            seen = codes.setdefault(path_of(method), set())

            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(message_of(method.input_type, pool), st.booleans())
            def generated(request: Message, as_operator: bool) -> None:
                metadata = operator if as_operator else ()
                seen.add(call(channel, method, request.SerializeToString(), metadata))  # noqa: B023

            @settings(
                max_examples=RAW_EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(st.binary(max_size=512))
            def raw(data: bytes) -> None:
                seen.add(call(channel, method, data, operator))  # noqa: B023

            generated()
            raw()
    finally:
        for channel in channels.values():
            channel.close()

    # Alive, serving, and not bloated.
    for name, proc in platform.services.items():
        assert proc.process is not None and proc.process.poll() is None, f"{name} died"
        with grpc.insecure_channel(proc.address) as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5
            )
        assert status.status == health_pb2.HealthCheckResponse.SERVING, name
    after = {name: rss_kb(pid) for name, pid in pids.items()}
    for name in SERVICES:
        growth = after[name] - before[name]
        print(f"{name}: RSS {before[name] // 1024} -> {after[name] // 1024} MiB")
        assert growth < RSS_GROWTH_LIMIT_KB, f"{name} grew by {growth // 1024} MiB"
    # The fuzzing reached past the edge: some calls of every service succeeded or were
    # refused by the services themselves, not all by the field checks.
    for path, cs in sorted(codes.items()):
        print(path, sorted(c.name for c in cs))
    reached = {c for cs in codes.values() for c in cs}
    assert grpc.StatusCode.OK in reached and grpc.StatusCode.NOT_FOUND in reached
