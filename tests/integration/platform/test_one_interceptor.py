"""`PlatformInterceptor` (issue 28) is the four interceptors every service ran — metrics,
errors, edge, NATS deadline — in one wrapper per call: the same calls through it and
through the four apart, on real gRPC servers, get the same status codes, details and
messages, and are counted with the same status each; the NATS deadline guard answers
UNAVAILABLE in time only while NATS is away, and never cuts a stream. Bidi streams are
wrapped too, as a whole: bytes that are no message end one INVALID_ARGUMENT, its errors
are mapped, it is counted when it ends, and server reflection still answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc

from boulevard.platform import metrics
from boulevard.platform.edge import EdgeInterceptor
from boulevard.platform.errors import NotFound
from boulevard.platform.grpc_errors import ErrorInterceptor
from boulevard.platform.interceptor import PlatformInterceptor
from boulevard.platform.nats_deadline import NatsDeadlineInterceptor

pytestmark = pytest.mark.integration

Request = health_pb2.HealthCheckRequest
Response = health_pb2.HealthCheckResponse
SERVICE = "test.One"


async def unary(request: Request, context: grpc.aio.ServicerContext[Any, Any]) -> Response:
    """What it does is named by the request's `service`."""
    if request.service == "missing":
        raise NotFound("no such thing")
    if request.service == "broken":
        raise RuntimeError("a bug")
    if request.service == "slow":
        await asyncio.sleep(3)
    if request.service == "abort":
        await context.abort(grpc.StatusCode.ALREADY_EXISTS, "aborted by the handler")
    return Response(status=Response.SERVING)


async def stream(
    request: Request, context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[Response]:
    for _ in range(3):
        yield Response(status=Response.SERVING)
        if request.service == "slow":
            await asyncio.sleep(0.4)  # past the client's deadline's guard point
    if request.service == "missing":
        raise NotFound("the stream ran out of things")


async def writer(request: Request, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """A streaming coroutine that writes (the health service's Watch shape)."""
    await context.write(Response(status=Response.SERVING))
    if request.service == "missing":
        raise NotFound("nothing more to write")


async def chat(
    requests: AsyncIterator[Request], context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[Response]:
    """A bidi stream answering each message (SubmitActions' shape)."""
    async for request in requests:
        if request.service == "missing":
            raise NotFound("no such thing on the stream")
        yield Response(status=Response.SERVING)


async def talk(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    """A bidi stream that reads and writes on its context (grpc's other bidi shape)."""
    while (request := await context.read()) is not grpc.aio.EOF:
        if request.service == "missing":
            raise NotFound("no such thing to talk about")
        await context.write(Response(status=Response.SERVING))


def handlers() -> grpc.GenericRpcHandler:
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Unary": grpc.unary_unary_rpc_method_handler(
                unary, Request.FromString, Response.SerializeToString
            ),
            "Stream": grpc.unary_stream_rpc_method_handler(
                stream, Request.FromString, Response.SerializeToString
            ),
            "Writer": grpc.unary_stream_rpc_method_handler(
                writer, Request.FromString, Response.SerializeToString
            ),
            "Chat": grpc.stream_stream_rpc_method_handler(
                chat, Request.FromString, Response.SerializeToString
            ),
            "Talk": grpc.stream_stream_rpc_method_handler(
                talk, Request.FromString, Response.SerializeToString
            ),
        },
    )


def four_apart(service: str, nats_up: Callable[[], bool]) -> list[Any]:
    return [
        metrics.MetricsInterceptor(service),
        ErrorInterceptor(),
        EdgeInterceptor(),
        NatsDeadlineInterceptor(nats_up),
    ]


def one(service: str, nats_up: Callable[[], bool]) -> list[Any]:
    return [PlatformInterceptor(service, nats_up)]


def count(service: str, method: str, code: str) -> float:
    labels = {"service": service, "method": method, "code": code}
    return metrics.REGISTRY.get_sample_value("boulevard_grpc_requests_total", labels) or 0.0


# (method, request bytes, client timeout): undecodable bytes are the edge's to refuse.
CALLS: list[tuple[str, bytes, float | None]] = [
    ("Unary", Request(service="ok").SerializeToString(), 5),
    ("Unary", Request(service="missing").SerializeToString(), 5),
    ("Unary", Request(service="broken").SerializeToString(), 5),
    ("Unary", Request(service="abort").SerializeToString(), 5),
    ("Unary", b"\xff\xff\xff", 5),
    ("Unary", Request(service="slow").SerializeToString(), 0.6),
    ("Stream", Request(service="ok").SerializeToString(), 5),
    ("Stream", Request(service="missing").SerializeToString(), 5),
    ("Stream", b"\xff\xff\xff", 5),
    ("Stream", Request(service="slow").SerializeToString(), 3),
    ("Writer", Request(service="ok").SerializeToString(), 5),
    ("Writer", Request(service="missing").SerializeToString(), 5),
]
CODES = (
    *("OK", "NOT_FOUND", "INTERNAL", "ALREADY_EXISTS", "INVALID_ARGUMENT", "UNAVAILABLE"),
    *("DEADLINE_EXCEEDED", "CANCELLED"),
)


async def outcomes(
    chain: Callable[[str, Callable[[], bool]], list[Any]], service: str, nats: bool
) -> tuple[list[tuple[str, str, list[bytes]]], dict[tuple[str, str], float]]:
    """Every call of CALLS through a server with `chain`: (code, details, messages) each,
    and how many calls of each method the server counted under each code."""
    before = {(m, c): count(service, m, c) for m in ("Unary", "Stream", "Writer") for c in CODES}
    server = grpc.aio.server(interceptors=chain(service, lambda: nats))
    server.add_generic_rpc_handlers((handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    seen = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for method, request, timeout in CALLS:
                path = f"/{SERVICE}/{method}"
                got: list[bytes] = []
                try:
                    if method == "Unary":
                        got.append(await channel.unary_unary(path)(request, timeout=timeout))
                    else:
                        async for item in channel.unary_stream(path)(request, timeout=timeout):
                            got.append(item)
                    code, details = "OK", ""
                except grpc.aio.AioRpcError as err:
                    code, details = err.code().name, err.details() or ""
                seen.append((code, details, got))
    finally:
        await server.stop(None)
    for _ in range(50):  # the server counts a call once it has answered it
        after = {k: count(service, *k) - v for k, v in before.items()}
        if sum(after.values()) == len(CALLS):
            break
        await asyncio.sleep(0.05)
    return seen, {k: v for k, v in after.items() if v}


@pytest.mark.parametrize("nats", [True, False], ids=["nats-up", "nats-away"])
async def test_one_wrapper_answers_and_counts_every_call_as_the_four_did(nats: bool) -> None:
    apart = await outcomes(four_apart, f"four-{nats}", nats)
    merged = await outcomes(one, f"one-{nats}", nats)
    assert merged == apart
    seen, counted = merged
    codes = [code for code, _details, _got in seen]
    slow = "UNAVAILABLE" if not nats else "DEADLINE_EXCEEDED"
    assert codes == [
        "OK", "NOT_FOUND", "INTERNAL", "ALREADY_EXISTS", "INVALID_ARGUMENT", slow,
        "OK", "NOT_FOUND", "INVALID_ARGUMENT", "OK", "OK", "NOT_FOUND",
    ]  # fmt: skip
    assert seen[2][1] == "internal error: RuntimeError"  # the bug's text stays in the log
    assert len(seen[6][2]) == len(seen[9][2]) == 3  # a slow stream is not cut
    assert counted[("Unary", "OK")] == 1
    assert counted[("Unary", "INVALID_ARGUMENT")] == 1
    assert counted[("Stream", "NOT_FOUND")] == 1
    assert counted[("Writer", "OK")] == 1


async def test_the_guard_answers_unavailable_before_the_clients_deadline() -> None:
    """With NATS away, a unary call that would outlast the caller's deadline is answered
    UNAVAILABLE in time (not DEADLINE_EXCEEDED), and the handler is stopped."""
    server = grpc.aio.server(interceptors=one("one-guard", lambda: False))
    server.add_generic_rpc_handlers((handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(f"/{SERVICE}/Unary")
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(Request(service="slow").SerializeToString(), timeout=1.0)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            assert loop.time() - started < 1.0
            # The handler's task lives on for the next call: a fast one is answered.
            assert await call(Request(service="ok").SerializeToString(), timeout=1.0)
    finally:
        await server.stop(None)


OK = Request(service="ok").SerializeToString()
MISSING = Request(service="missing").SerializeToString()
# (method, the messages sent on one stream): a bad one last, as nothing after it is read.
BIDI: list[tuple[str, list[bytes]]] = [
    ("Chat", [OK, OK]),
    ("Chat", [OK, b"\xff\xff\xff"]),
    ("Chat", [OK, MISSING]),
    ("Talk", [OK, OK]),
    ("Talk", [OK, b"\xff\xff\xff"]),
    ("Talk", [OK, MISSING]),
]


async def bidi_outcomes(
    chain: Callable[[str, Callable[[], bool]], list[Any]], service: str
) -> tuple[list[tuple[str, str, int]], dict[tuple[str, str], float]]:
    """Every stream of BIDI through a server with `chain`: (code, details, answers) each,
    and how many streams the server counted under each method and code."""
    methods = [f"{m}{metrics.BIDI_STREAM}" for m in ("Chat", "Talk")] + ["Chat", "Talk"]
    before = {(m, c): count(service, m, c) for m in methods for c in CODES}
    server = grpc.aio.server(interceptors=chain(service, lambda: True))
    server.add_generic_rpc_handlers((handlers(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    seen = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for method, messages in BIDI:
                call = channel.stream_stream(f"/{SERVICE}/{method}")(timeout=5)
                for message in messages:
                    await call.write(message)
                await call.done_writing()
                answers = 0
                try:
                    while await call.read() is not grpc.aio.EOF:
                        answers += 1
                    code, details = "OK", ""
                except grpc.aio.AioRpcError as err:
                    code, details = err.code().name, err.details() or ""
                seen.append((code, details, answers))
    finally:
        await server.stop(None)
    for _ in range(50):  # the server counts a stream once it has ended it
        after = {k: count(service, *k) - v for k, v in before.items()}
        if sum(after.values()) >= len(BIDI):
            break
        await asyncio.sleep(0.05)
    return seen, {k: v for k, v in after.items() if v}


async def test_a_bidi_stream_is_checked_mapped_and_counted_as_a_whole() -> None:
    """Before bidi streams were wrapped, undecodable bytes ended one UNKNOWN, a domain
    error too, and no stream was counted."""
    apart = await bidi_outcomes(four_apart, "four-bidi")
    merged = await bidi_outcomes(one, "one-bidi")
    assert merged == apart
    seen, counted = merged
    undecodable = "the request bytes are not a valid message (DecodeError)"
    for shape in (seen[:3], seen[3:]):
        assert shape[0] == ("OK", "", 2)
        assert shape[1] == ("INVALID_ARGUMENT", undecodable, 1)
        assert shape[2][0] == "NOT_FOUND" and shape[2][2] == 1
    assert seen[2][1] == "no such thing on the stream"
    assert counted == {
        (f"{method}{metrics.BIDI_STREAM}", code): 1
        for method in ("Chat", "Talk")
        for code in ("OK", "INVALID_ARGUMENT", "NOT_FOUND")
    }


async def test_server_reflection_lists_the_services_through_the_interceptor() -> None:
    """grpcurl's `list`: reflection is a bidi stream, wrapped like any other."""
    server = grpc.aio.server(interceptors=one("one-reflection", lambda: True))
    server.add_generic_rpc_handlers((handlers(),))
    reflection.enable_server_reflection((SERVICE, reflection.SERVICE_NAME), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    method = f"ServerReflectionInfo{metrics.BIDI_STREAM}"
    before = count("one-reflection", method, "OK")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            ask = reflection_pb2.ServerReflectionRequest(list_services="")
            answers = [a async for a in stub.ServerReflectionInfo(iter([ask]), timeout=5)]
        listed = [s.name for s in answers[0].list_services_response.service]
        assert sorted(listed) == sorted([SERVICE, reflection.SERVICE_NAME])
    finally:
        await server.stop(None)
    for _ in range(50):
        if count("one-reflection", method, "OK") > before:
            break
        await asyncio.sleep(0.05)
    assert count("one-reflection", method, "OK") == before + 1
