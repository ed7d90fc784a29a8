"""SubmitActions, the stream a seat submits its moves on, answers each move as SubmitAction
does — the same responses, receipts, idempotency, codes and messages — and is one seat's
alone: it never acts for another seat or game, ends with its token, and refuses replays as
the unary call does. On a real nats-server of the test's own, with the dice service and the
engine in this process (tests/integration/engine/support.py)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.audit.signing import SigningKey
from boulevard.platform import metrics
from boulevard.platform.auth import PlayerClaims, issue_token
from boulevard.seats.player import play_game, reveal_seed
from boulevard.seats.signing import signed_submit
from boulevard.seats.submitting import SubmitStream
from services.engine import server as engine_server
from tests.integration.engine.support import TOKEN_KEY, create_game, running_dice, start_engine
from tests.support.keys import seat_key, seat_keys
from tests.support.nats import NatsHandle

pytestmark = pytest.mark.integration


async def seat_to_act(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, tokens: list[str]
) -> tuple[int, engine_pb2.ListLegalActionsResponse]:
    for seat, token in enumerate(tokens):
        legal = await stub.ListLegalActions(
            engine_pb2.ListLegalActionsRequest(game_id=game_id, player_token=token)
        )
        if legal.actions:
            return seat, legal
    raise AssertionError("nobody may act")


def move(
    game_id: str, token: str, seat: int, legal: engine_pb2.ListLegalActionsResponse
) -> engine_pb2.SubmitActionRequest:
    return signed_submit(
        game_id, token, seat, seat_key(seat), legal.actions[0], legal.version, uuid.uuid4().hex
    )


async def unary_status(
    stub: engine_pb2_grpc.EngineServiceStub, request: engine_pb2.SubmitActionRequest
) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.SubmitAction(request)
    return err.value.code(), err.value.details() or ""


async def exchange(call: Any, request: engine_pb2.SubmitActionRequest) -> Any:
    await call.write(engine_pb2.SubmitActionsRequest(submit=request))
    return await call.read()


async def ended(call: Any) -> tuple[grpc.StatusCode, str]:
    """The status a stream ended with (after the message that ended it)."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call.read()
    return err.value.code(), err.value.details() or ""


async def test_a_move_on_the_stream_is_answered_as_submit_action_answers_it(
    nats_server: NatsHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_server, "SUBMIT_FIRST_SECONDS", 0.5)
    async with running_dice(nats_server, tmp_path):
        engine = await start_engine(nats_server, tmp_path, SigningKey(b"\x31" * 32))
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                other, _ = await create_game(stub)
                game_id, tokens = created.game_id, list(created.player_tokens)
                for seat, token in enumerate(tokens):
                    await reveal_seed(stub, game_id, token, seeds[seat])
                seat, legal = await seat_to_act(stub, game_id, tokens)

                call = stub.SubmitActions()
                first = move(game_id, tokens[seat], seat, legal)
                reply = await exchange(call, first)
                assert reply.idempotency_key == first.idempotency_key
                assert reply.WhichOneof("result") == "accepted"
                accepted = reply.accepted
                assert accepted.version > legal.version and accepted.receipt.signature
                # The same move again (a retry, or a replay of what was sent): on the stream
                # as on the unary call, it is not applied twice — both answer the same.
                again = await exchange(call, first)
                assert again.accepted == await stub.SubmitAction(first) == accepted

                # Refusals come back as SubmitAction's code and message; the stream goes on.
                stale = move(game_id, tokens[seat], seat, legal)  # the version moved on
                forged = engine_pb2.SubmitActionRequest()
                forged.CopyFrom(stale)
                forged.signature = seat_key(3).sign(b"not the move")
                oversized = engine_pb2.SubmitActionRequest()
                oversized.CopyFrom(stale)
                oversized.idempotency_key = "k" * 129
                codes = []
                for refused in (stale, forged, oversized):
                    answer = await exchange(call, refused)
                    assert answer.WhichOneof("result") == "error"
                    code, text = await unary_status(stub, refused)
                    assert (_code(answer.error.code), answer.error.message) == (code, text)
                    codes.append(code)
                assert codes == [
                    grpc.StatusCode.ABORTED,
                    grpc.StatusCode.PERMISSION_DENIED,  # the signature is checked first
                    grpc.StatusCode.INVALID_ARGUMENT,
                ], codes
                # The stream still answers after its refusals (the same stale move again).
                assert _code((await exchange(call, stale)).error.code) == grpc.StatusCode.ABORTED
                # Las Vegas passes the turn: the other seat may act now.
                other_seat, legal_now = await seat_to_act(stub, game_id, tokens)
                assert other_seat != seat

                # Another seat's legal move, with its own token, on this seat's stream: the
                # stream ends, and the move is not applied.
                before = legal_now.version
                await call.write(
                    engine_pb2.SubmitActionsRequest(
                        submit=move(game_id, tokens[other_seat], other_seat, legal_now)
                    )
                )
                code, text = await ended(call)
                assert code == grpc.StatusCode.PERMISSION_DENIED and "seat" in text
                assert (await seat_to_act(stub, game_id, tokens))[1].version == before

                # Another game's move on a stream bound to this game: ends the same way.
                call = stub.SubmitActions()
                stale_here = move(game_id, tokens[seat], seat, legal)
                assert (await exchange(call, stale_here)).error.code
                elsewhere = move(other.game_id, other.player_tokens[0], 0, legal)
                await call.write(engine_pb2.SubmitActionsRequest(submit=elsewhere))
                assert (await ended(call))[0] == grpc.StatusCode.PERMISSION_DENIED

                # A token for another game than the move names: as SubmitAction refuses it.
                call = stub.SubmitActions()
                mixed = move(game_id, other.player_tokens[0], 0, legal)
                await call.write(engine_pb2.SubmitActionsRequest(submit=mixed))
                assert await ended(call) == await unary_status(stub, mixed)

                # An expired (or forged) token ends the stream as SubmitAction fails.
                key = TOKEN_KEY.encode()
                expired = issue_token(key, PlayerClaims(game_id, seat, f"p{seat}"), -1)
                late = move(game_id, expired, seat, legal)
                call = stub.SubmitActions()
                await call.write(engine_pb2.SubmitActionsRequest(submit=late))
                assert await ended(call) == await unary_status(stub, late)
                assert (await unary_status(stub, late))[0] == grpc.StatusCode.UNAUTHENTICATED

                # A stream outlives no token: idle past its token's expiry, it ends.
                brief = issue_token(key, PlayerClaims(game_id, seat, f"p{seat}"), 1.5)
                call = stub.SubmitActions()
                assert (await exchange(call, move(game_id, brief, seat, legal))).error.code
                code, text = await asyncio.wait_for(ended(call), 10)
                assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in text

                # A stream that never says whose it is does not stay open.
                call = stub.SubmitActions()
                code, text = await asyncio.wait_for(ended(call), 10)
                assert code == grpc.StatusCode.UNAUTHENTICATED and "no move" in text

                # Each seat has a few streams at most (the WatchGame bound).
                held = []
                for _ in range(engine.app.settings.engine_max_streams_per_seat):
                    held.append(stub.SubmitActions())
                    assert (await exchange(held[-1], stale_here)).error.code
                call = stub.SubmitActions()
                await call.write(engine_pb2.SubmitActionsRequest(submit=stale_here))
                assert (await ended(call))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
                for h in held:
                    h.cancel()
        finally:
            await engine.stop()


def _code(number: int) -> Any:
    return next(c for c in grpc.StatusCode if c.value[0] == number)


async def test_bots_play_a_game_to_its_end_on_their_streams(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    async with running_dice(nats_server, tmp_path):
        engine = await start_engine(nats_server, tmp_path, SigningKey(b"\x32" * 32))
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                seats = await play_game(
                    channel,
                    created.game_id,
                    "las_vegas",
                    list(created.player_tokens),
                    seat_keys(2),
                    client_seeds=seeds,
                )
                got = await stub.GetGame(engine_pb2.GetGameRequest(game_id=created.game_id))
                assert got.status == engine_pb2.GAME_STATUS_FINISHED
                for player in seats:
                    assert isinstance(player.moves_stream, SubmitStream)
                    assert not player.moves_stream.unary and player.moves_stream.opened >= 1
                    assert player.moves and len(player.receipts) == player.moves
        finally:
            await engine.stop()


async def test_bytes_that_are_no_message_end_the_stream_invalid_argument(
    nats_server: NatsHandle, tmp_path: Path
) -> None:
    """Corrupt request bytes on the stream get what a unary call's get (INVALID_ARGUMENT),
    never INTERNAL: found by tests/e2e/test_fuzz.py, which sends every RPC raw bytes. The
    platform's interceptor does it, as for every bidi stream, and counts the stream."""
    ended_invalid = {
        "service": "engine",
        "method": "SubmitActions.stream",
        "code": "INVALID_ARGUMENT",
    }
    before = stream_count(ended_invalid)
    async with running_dice(nats_server, tmp_path):
        engine = await start_engine(nats_server, tmp_path, SigningKey(b"\x32" * 32))
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                path = "/boulevard.v1.EngineService/SubmitActions"
                call = channel.stream_stream(path)()  # raw bytes both ways
                await call.write(b"\x0a\xff")  # field 1, a length past the end
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call.read()
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, err.value
                assert "not a valid message (DecodeError)" in (err.value.details() or "")
                for _ in range(50):  # counted once the server has ended the stream
                    if stream_count(ended_invalid) > before:
                        break
                    await asyncio.sleep(0.05)
                assert stream_count(ended_invalid) == before + 1
                unary = channel.unary_unary("/boulevard.v1.EngineService/SubmitAction")
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await unary(b"\x0a\xff")
                assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        finally:
            await engine.stop()


def stream_count(labels: dict[str, str]) -> float:
    sample = metrics.REGISTRY.get_sample_value("boulevard_grpc_requests_total", labels)
    return sample or 0.0
