"""The engine's internal API: NATS request/reply on `<prefix>.<op>` (default `dice.rpc.*`),
protobuf in (`Dice*Request`), one `DiceRpcReply` out. Served by a queue group, so several
dice replicas share the load; each request is handled in its own task (the dealer serialises
draws per game), and the reply is sent only after the outcome is stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from google.protobuf.message import DecodeError
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from boulevard.api.v1 import dice_pb2
from boulevard.platform import tracing
from boulevard.platform.errors import BoulevardError, InvalidArgument, nats_unavailable
from boulevard.platform.wire import sent_unknown_field
from services.dice.dealer import Dealer

log = structlog.get_logger(__name__)

Handler = Callable[[bytes], Awaitable[dice_pb2.DiceRpcReply]]


class DiceRpc:
    def __init__(self, nc: NATS, dealer: Dealer, prefix: str, queue: str) -> None:
        self._nc = nc
        self._dealer = dealer
        self._prefix = prefix
        self._queue = queue
        self._sub: Subscription | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, Handler] = {
            "open": self._open,
            "seeds": self._seeds,
            "roll": self._roll,
            "shuffle": self._shuffle,
            "reveal": self._reveal,
            "head": self._head,
        }

    async def start(self) -> None:
        self._sub = await self._nc.subscribe(
            f"{self._prefix}.*", queue=self._queue, cb=self._on_message, pending_msgs_limit=-1
        )

    async def stop(self) -> None:
        """Stop taking requests; let the ones in hand finish and answer."""
        if self._sub is not None:
            await self._sub.unsubscribe()
            self._sub = None
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _on_message(self, msg: Msg) -> None:
        task = asyncio.create_task(self._handle(msg))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, msg: Msg) -> None:
        with tracing.nats_handler_span(msg.subject, msg.headers):
            await self._answer(msg)

    async def _answer(self, msg: Msg) -> None:
        op = msg.subject.rsplit(".", 1)[-1]
        handler = self._handlers.get(op)
        try:
            if handler is None:
                reply = _error("invalid_argument", f"unknown dice operation {op!r}")
            else:
                reply = await handler(msg.data)
        except DecodeError:
            reply = _error("invalid_argument", f"{op}: the request is not a valid message")
        except BoulevardError as e:
            reply = _error(e.status.name.lower(), str(e))
        except Exception as e:
            if nats_unavailable(e):
                # JetStream out of reach (a cluster electing a leader, a reconnect): the
                # engine retries "unavailable" with the same request id; "internal" it won't.
                log.warning("dice request: NATS unavailable", op=op, error=type(e).__name__)
                reply = _error("unavailable", f"NATS did not answer ({type(e).__name__})")
            else:
                log.exception("dice request failed", op=op)
                reply = _error("internal", f"internal error: {type(e).__name__}")
        if msg.reply:
            try:
                await msg.respond(reply.SerializeToString())
            except Exception:
                log.warning("could not answer a dice request", op=op, exc_info=True)

    async def _open(self, data: bytes) -> dice_pb2.DiceRpcReply:
        request = dice_pb2.DiceOpenRequest.FromString(data)
        if sent_unknown_field(request, 2):
            raise InvalidArgument(
                "open takes the seats' seed commitments only; the seeds come after the "
                "commitment, with dice.rpc.seeds"
            )
        commitment = await self._dealer.open_game(
            request.game_id,
            list(request.client_seed_commitments),
            request.reveal_deadline_unix_ms,
        )
        return dice_pb2.DiceRpcReply(commitment=commitment)

    async def _seeds(self, data: bytes) -> dice_pb2.DiceRpcReply:
        r = dice_pb2.DiceSeedsRequest.FromString(data)
        seeds = await self._dealer.fix_seeds(r.game_id, list(r.client_seeds), list(r.missing_seats))
        return dice_pb2.DiceRpcReply(seeds=seeds)

    async def _roll(self, data: bytes) -> dice_pb2.DiceRpcReply:
        r = dice_pb2.DiceRollRequest.FromString(data)
        outcome = await self._dealer.roll(r.game_id, r.request_id, r.count, r.sides, r.purpose)
        return dice_pb2.DiceRpcReply(outcome=outcome)

    async def _shuffle(self, data: bytes) -> dice_pb2.DiceRpcReply:
        r = dice_pb2.DiceShuffleRequest.FromString(data)
        outcome = await self._dealer.shuffle(r.game_id, r.request_id, r.count, r.purpose)
        return dice_pb2.DiceRpcReply(outcome=outcome)

    async def _reveal(self, data: bytes) -> dice_pb2.DiceRpcReply:
        r = dice_pb2.DiceRevealRequest.FromString(data)
        reveal = await self._dealer.reveal(r.game_id, r.reason)
        return dice_pb2.DiceRpcReply(reveal=reveal)

    async def _head(self, data: bytes) -> dice_pb2.DiceRpcReply:
        r = dice_pb2.DiceHeadRequest.FromString(data)
        return dice_pb2.DiceRpcReply(head=await self._dealer.head(r.game_id))


def _error(code: str, message: str) -> dice_pb2.DiceRpcReply:
    return dice_pb2.DiceRpcReply(error=dice_pb2.DiceRpcError(code=code, message=message))
