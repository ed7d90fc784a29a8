"""The dice RPC answers "unavailable" (which the engine retries with the same request id)
when JetStream does not answer, as during a cluster's leader election, and "internal"
only for what is really unexpected. Seen in the cluster test: NoStreamResponseError came
back to players as INTERNAL."""

from __future__ import annotations

from typing import Any

import nats.js.errors
import pytest

from boulevard.api.v1 import dice_pb2
from services.dice.rpc import DiceRpc


class Msg:
    subject = "dice.rpc.roll"
    reply = "_INBOX.engine.x"
    headers = None

    def __init__(self) -> None:
        self.data = dice_pb2.DiceRollRequest(
            game_id="g1", request_id="g1:3", count=2, sides=6
        ).SerializeToString()
        self.answer = dice_pb2.DiceRpcReply()

    async def respond(self, data: bytes) -> None:
        self.answer = dice_pb2.DiceRpcReply.FromString(data)


class Dealer:
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def roll(self, *args: Any) -> dice_pb2.DiceOutcome:
        raise self.error


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (nats.js.errors.NoStreamResponseError(), "unavailable"),
        (TimeoutError(), "unavailable"),
        (ZeroDivisionError(), "internal"),
    ],
)
async def test_what_the_engine_is_told_when_a_draw_fails(error: Exception, code: str) -> None:
    rpc = DiceRpc(None, Dealer(error), "dice.rpc", "dice")  # type: ignore[arg-type]
    msg = Msg()
    await rpc._handle(msg)  # type: ignore[arg-type]
    assert msg.answer.WhichOneof("result") == "error"
    assert msg.answer.error.code == code
