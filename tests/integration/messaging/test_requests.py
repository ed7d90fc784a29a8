"""The lean request path (boulevard.messaging.requests) answers as nats-py's `request` and
`JetStreamContext.publish` do, on a real nats-server, and leaves nothing waiting."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from boulevard.messaging.requests import Requests, requests_on
from boulevard.messaging.streams import StreamSpec, ensure_stream
from tests.support.nats import NatsHandle, connect_as

pytestmark = pytest.mark.integration


async def ignore(msg: Msg) -> None:
    pass  # a subscriber that never answers


async def echo(nc: NATS, subject: str) -> None:
    async def answer(msg: Msg) -> None:
        await nc.publish(msg.reply, b"re:" + msg.data, headers={"Seen": msg.headers["X"]})

    await nc.subscribe(subject, cb=answer)


async def test_replies_come_back_to_their_request(nc: NATS) -> None:
    await echo(nc, "svc.echo")
    requests = requests_on(nc)
    assert requests_on(nc) is requests  # one reply subscription a connection
    replies = await asyncio.gather(
        *(requests.request("svc.echo", str(i).encode(), 5.0, {"X": str(i)}) for i in range(50))
    )
    assert [m.data for m in replies] == [f"re:{i}".encode() for i in range(50)]
    assert [m.headers["Seen"] for m in replies] == [str(i) for i in range(50)]
    assert requests.waiting() == 0


async def test_nobody_listening_and_no_reply_are_nats_pys_errors(nc: NATS) -> None:
    requests = Requests(nc)
    with pytest.raises(nats.errors.NoRespondersError):
        await requests.request("svc.nobody", b"", 5.0)
    await nc.subscribe("svc.silent", cb=ignore)
    with pytest.raises(nats.errors.TimeoutError):
        await requests.request("svc.silent", b"", 0.2)
    with pytest.raises(TimeoutError):  # what callers catch: nats-py's is one
        await requests.request("svc.silent", b"", 0.2)
    assert requests.waiting() == 0


async def test_a_cancelled_request_leaves_nothing_waiting(nc: NATS) -> None:
    await nc.subscribe("svc.silent", cb=ignore)
    requests = Requests(nc)
    call = asyncio.create_task(requests.request("svc.silent", b"", 30.0))
    await asyncio.sleep(0.1)
    assert requests.waiting() == 1
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert requests.waiting() == 0


async def test_jetstream_publish_as_nats_py_answers_it(nc: NATS) -> None:
    await ensure_stream(nc.jetstream(), StreamSpec(name="T", subjects=("t.>",)))
    requests = Requests(nc)
    first = await requests.publish("t.a", b"one", 5.0, {"Nats-Msg-Id": "m1"})
    assert (first.seq, first.duplicate) == (1, False)
    again = await requests.publish("t.a", b"one", 5.0, {"Nats-Msg-Id": "m1"})
    assert (again.seq, again.duplicate) == (1, True)
    # The expected-sequence refusal the event store turns into a conflict: the same code.
    with pytest.raises(nats.js.errors.APIError) as refused:
        await requests.publish(
            "t.a", b"two", 5.0, {"Nats-Msg-Id": "m2", "Nats-Expected-Last-Subject-Sequence": "7"}
        )
    assert refused.value.err_code == 10071
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await requests.publish("nostream.a", b"", 5.0)


async def test_works_under_a_services_own_identity(nats_server: NatsHandle) -> None:
    """Replies come to the connection's own inbox, the only one its identity may read."""
    engine = await connect_as(nats_server, "engine")
    admin = await nats_server.connect()
    try:
        await ensure_stream(admin.jetstream(), StreamSpec(name="GAMES", subjects=("game.>",)))
        stored = await Requests(engine).publish("game.g1", b"x", 5.0, {"Nats-Msg-Id": "e1"})
        assert stored.seq == 1
    finally:
        await engine.close()
        await admin.close()


async def test_a_responder_cannot_name_the_next_requests_reply_subject(nc: NATS) -> None:
    """Each request's reply subject ends in its own random token: a responder that saw one
    (and may publish anywhere, as admin may) cannot answer the next request before its
    real answer comes, whatever it guesses from the one it saw."""
    requests = Requests(nc)
    seen: list[str] = []

    async def answer(msg: Msg) -> None:
        seen.append(msg.reply)
        if len(seen) == 1:
            head, _, token = msg.reply.rpartition(".")
            guesses = {f"{head}.{n}" for n in range(200)}
            if token.isdigit():
                guesses |= {f"{head}.{int(token) + n}" for n in range(1, 200)}
            guesses |= {f"{head}.{int(token, 16) + n:0{len(token)}x}" for n in range(1, 200)}
            for guess in guesses:
                await nc.publish(guess, b"forged")
            await nc.flush()
        await nc.publish(msg.reply, b"real")

    await nc.subscribe("svc.pick", cb=answer)
    first = await requests.request("svc.pick", b"", 5.0)
    second = await requests.request("svc.pick", b"", 5.0)
    assert (first.data, second.data) == (b"real", b"real")
    tokens = [reply.rpartition(".")[2] for reply in seen]
    assert tokens[0] != tokens[1] and all(len(t) >= 16 for t in tokens)  # 64 random bits
