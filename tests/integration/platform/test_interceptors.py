"""The interceptor chain every service runs (metrics, errors, edge) keeps each handler's
shape: the health service's Watch, a streaming coroutine that writes with `context.write`,
answered UNKNOWN ("'async for' requires an object with __aiter__") through the metrics
interceptor until they shared one way of wrapping handlers."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from boulevard.platform import metrics
from boulevard.platform.edge import EdgeInterceptor
from boulevard.platform.grpc_errors import ErrorInterceptor

pytestmark = pytest.mark.integration


def watch_count(code: str) -> float:
    labels = {"service": "interceptor-test", "method": "Watch", "code": code}
    return metrics.REGISTRY.get_sample_value("boulevard_grpc_requests_total", labels) or 0.0


async def test_health_watch_and_check_pass_through_the_whole_chain() -> None:
    server = grpc.aio.server(
        interceptors=[
            metrics.MetricsInterceptor("interceptor-test"),
            ErrorInterceptor(),
            EdgeInterceptor(),
        ]
    )
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        before = watch_count("CANCELLED")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            check = await stub.Check(health_pb2.HealthCheckRequest())
            assert check.status == health_pb2.HealthCheckResponse.SERVING
            watch = stub.Watch(health_pb2.HealthCheckRequest())
            first = await asyncio.wait_for(watch.read(), 5)
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            await servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
            second = await asyncio.wait_for(watch.read(), 5)
            assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
            watch.cancel()
        for _ in range(50):  # the server records the call once it sees the cancellation
            if watch_count("CANCELLED") > before:
                break
            await asyncio.sleep(0.05)
        assert watch_count("CANCELLED") == before + 1
    finally:
        await server.stop(None)


CHECK = "/grpc.health.v1.Health/Check"


def check_count(code: str) -> float:
    labels = {"service": "interceptor-test", "method": "Check", "code": code}
    return metrics.REGISTRY.get_sample_value("boulevard_grpc_requests_total", labels) or 0.0


async def test_wrappers_are_built_once_per_method_and_still_see_every_call() -> None:
    chain = [metrics.MetricsInterceptor("interceptor-test"), ErrorInterceptor(), EdgeInterceptor()]
    server = grpc.aio.server(interceptors=chain)
    servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        ok, missing = check_count("OK"), check_count("NOT_FOUND")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest())
            first = [i._rewrapped._built[CHECK][1] for i in chain]
            for _ in range(4):
                await stub.Check(health_pb2.HealthCheckRequest())
            for _ in range(3):  # an unknown service: each call its own status, as before
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await stub.Check(health_pb2.HealthCheckRequest(service="nope"))
                assert err.value.code() == grpc.StatusCode.NOT_FOUND
            # A method nobody serves is not kept: the cache is bounded by the real methods.
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await channel.unary_unary("/no.Such/Method")(b"")
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        assert check_count("OK") == ok + 5
        assert check_count("NOT_FOUND") == missing + 3
        for interceptor, built in zip(chain, first, strict=True):
            assert list(interceptor._rewrapped._built) == [CHECK]
            assert interceptor._rewrapped._built[CHECK][1] is built  # not rebuilt per call
    finally:
        await server.stop(None)
