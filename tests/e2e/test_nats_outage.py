"""NATS stops under the running services (issue 11, "With NATS down, every service stays
SERVING while every call fails with INTERNAL"): health says NOT_SERVING, calls that need
NATS answer UNAVAILABLE, a SubmitAction whose append was not confirmed says to retry with
the same key, and after NATS is back everything serves again and that retry is applied
exactly once."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc, events_pb2, ledger_pb2, ledger_pb2_grpc
from boulevard.cli.up import wait_serving
from boulevard.eventlog.jetstream import JetStreamEventStore
from boulevard.seats.signing import signed_submit
from tests.e2e.conftest import TOKEN_KEY
from tests.e2e.test_games import create
from tests.support.identity import auth_env
from tests.support.keys import seat_key
from tests.support.nats import NatsHandle, start_test_nats
from tests.support.processes import ServiceProcess, service_env

pytestmark = pytest.mark.e2e

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Outage:
    def __init__(self, tmp_path: Path) -> None:
        self.nats: NatsHandle = start_test_nats(tmp_path / "nats")
        env = service_env(
            self.nats,
            tmp_path / "data",
            {"BOULEVARD_TOKEN_KEY": TOKEN_KEY, **auth_env()},
        )
        self.procs = {n: ServiceProcess(n, env, tmp_path) for n in ("dice", "engine", "ledger")}

    async def start(self) -> None:
        for proc in self.procs.values():
            proc.start()
        for proc in self.procs.values():
            await wait_serving(proc.address, 30, proc.process)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.stop()
        self.nats.stop()

    def logs(self) -> str:
        return "\n".join(f"--- {n}\n{p.log()[-3000:]}" for n, p in self.procs.items())


@pytest.fixture
def outage(tmp_path: Path) -> Iterator[Outage]:
    o = Outage(tmp_path)
    try:
        yield o
    except BaseException:
        print(o.logs())
        raise
    finally:
        o.stop()


async def health(address: str) -> int:
    async with grpc.aio.insecure_channel(address) as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5
        )
        return int(reply.status)


async def wait_health(address: str, wanted: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    status = -1
    while time.monotonic() < deadline:
        status = await health(address)
        if status == wanted:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{address} health is {status}, not {wanted}")


async def test_nats_down_means_not_serving_and_unavailable_then_recovery(
    outage: Outage,
) -> None:
    await outage.start()
    engine_addr = outage.procs["engine"].address
    ledger_addr = outage.procs["ledger"].address
    async with grpc.aio.insecure_channel(engine_addr) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        created = await create(stub, "las_vegas", 2)
        game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
        (seat,) = game.to_act
        token = created.player_tokens[seat]
        legal = await stub.ListLegalActions(
            engine_pb2.ListLegalActionsRequest(game_id=created.game_id, player_token=token)
        )
        key = uuid.uuid4().hex
        submit = signed_submit(
            created.game_id, token, seat, seat_key(seat), legal.actions[0], 0, key
        )

        outage.nats.stop()
        for address in (engine_addr, ledger_addr, outage.procs["dice"].address):
            await wait_health(address, NOT_SERVING)

        # A deadline shorter than NATS's own timeouts (5 s): UNAVAILABLE, within it.
        for timeout in (1.0, 2.5):
            started = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await stub.SubmitAction(submit, timeout=timeout)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
            assert "retry with the same idempotency_key" in (err.value.details() or "")
            assert time.monotonic() - started < timeout
        # The engine holds this game in memory, so the command reaches the append, which
        # cannot be confirmed: the answer tells the client how to retry.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.SubmitAction(submit, timeout=30)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "retry with the same idempotency_key" in (err.value.details() or "")
        # A game it must read from the log: UNAVAILABLE, not INTERNAL.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.GetGame(engine_pb2.GetGameRequest(game_id="no-such-game"), timeout=30)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
        # The games index in memory does not serve a list it cannot keep current.
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ListGames(engine_pb2.ListGamesRequest(), timeout=30)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()
        assert "games index" in (err.value.details() or "")
    async with grpc.aio.insecure_channel(ledger_addr) as channel:
        ledger = ledger_pb2_grpc.LedgerServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await ledger.Reconcile(ledger_pb2.ReconcileRequest(game_id=created.game_id), timeout=60)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE, err.value.details()

    outage.nats.restart()  # same port, same store
    for address in (engine_addr, ledger_addr, outage.procs["dice"].address):
        await wait_health(address, SERVING)

    async with grpc.aio.insecure_channel(engine_addr) as channel:
        stub = engine_pb2_grpc.EngineServiceStub(channel)
        listed = await stub.ListGames(engine_pb2.ListGamesRequest(), timeout=30)
        assert created.game_id in [g.game_id for g in listed.games]
        first = await stub.SubmitAction(submit, timeout=30)
        again = await stub.SubmitAction(submit, timeout=30)
        assert [e.event_id for e in first.events] == [e.event_id for e in again.events]
        assert first.events
    # The command is in the log exactly once, whether the buffered publish of the first
    # attempt reached the server when NATS came back or the retry wrote it.
    nc = await outage.nats.connect()
    try:
        recorded = await JetStreamEventStore(nc, "GAMES", "game").read(created.game_id)
    finally:
        await nc.close()
    envelopes = [events_pb2.EventEnvelope.FromString(r.data) for r in recorded]
    caused = [e.version for e in envelopes if e.causation_id == f"cmd:{key}"]
    assert caused and caused == list(range(caused[0], caused[0] + len(caused)))
    assert [e.version for e in first.events] == caused[: len(first.events)]
    types = [e.type for e in envelopes if e.causation_id == f"cmd:{key}"]
    assert types.count(first.events[0].type) == 1
