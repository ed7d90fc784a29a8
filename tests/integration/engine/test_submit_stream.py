"""SubmitActions, the stream a seat submits its moves on, answers each move as SubmitAction
does — the same responses, receipts, idempotency, codes and messages — and is one seat's
alone: it never acts for another seat or game, ends with its token, and refuses replays as
the unary call does. On a real nats-server of the test's own, with the dice service and the
engine in this process (tests/integration/engine/support.py)."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from boulevard.api.v1 import engine_pb2, engine_pb2_grpc
from boulevard.audit.signing import SigningKey
from boulevard.platform import metrics
from boulevard.platform.auth import PlayerClaims, issue_token, verify_token
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
                    assert not player.moves_stream.unary
                    # Each seat opened its stream as it sat down (`open`), and every move of
                    # its game went on that one stream.
                    assert player.moves_stream.opens and player.moves_stream.opened == 1
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


def open_message(game_id: str, token: str) -> engine_pb2.SubmitActionsRequest:
    return engine_pb2.SubmitActionsRequest(
        open=engine_pb2.SubmitActionsOpen(game_id=game_id, player_token=token)
    )


async def opened(call: Any, game_id: str, token: str) -> engine_pb2.SubmitActionsOpened:
    """An `open` written and its answer, which must be `opened`."""
    await call.write(open_message(game_id, token))
    reply = await call.read()
    assert reply.WhichOneof("result") == "opened", reply
    answer: engine_pb2.SubmitActionsOpened = reply.opened
    return answer


def counted(method: str, code: str) -> float:
    return stream_count({"service": "engine", "method": method, "code": code})


def moves_timed() -> float:
    labels = {"service": "engine", "method": "SubmitActions"}
    return metrics.REGISTRY.get_sample_value("boulevard_grpc_request_seconds_count", labels) or 0.0


async def test_an_open_binds_the_stream_before_any_move_and_runs_none(
    nats_server: NatsHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: a seat opens its stream at sit-down with `open`, so its first move finds it
    open. An `open` is checked as a first move is (its token, its game, the seat's bound on
    streams) and binds the stream as one does; it runs no move, and it is counted apart."""
    monkeypatch.setattr(engine_server, "SUBMIT_FIRST_SECONDS", 0.5)
    async with running_dice(nats_server, tmp_path):
        engine = await start_engine(nats_server, tmp_path, SigningKey(b"\x33" * 32))
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                other, _ = await create_game(stub)
                game_id, tokens = created.game_id, list(created.player_tokens)
                for seat, token in enumerate(tokens):
                    await reveal_seed(stub, game_id, token, seeds[seat])
                seat, legal = await seat_to_act(stub, game_id, tokens)
                key = TOKEN_KEY.encode()

                # Opened: the seat and its token's expiry; no move runs, none is counted.
                opens, timed = counted("SubmitActions.open", "OK"), moves_timed()
                call = stub.SubmitActions()
                answer = await opened(call, game_id, tokens[seat])
                claims = verify_claims(tokens[seat])
                assert answer.seat == seat
                assert answer.expires_unix_ms == claims.expires_unix * 1000
                assert (await seat_to_act(stub, game_id, tokens))[1].version == legal.version
                assert counted("SubmitActions.open", "OK") == opens + 1
                assert moves_timed() == timed  # an open is no move: not in the histogram
                # Past SUBMIT_FIRST_SECONDS, the bound stream is open: its moves run on it.
                await asyncio.sleep(0.8)
                first = move(game_id, tokens[seat], seat, legal)
                reply = await exchange(call, first)
                assert reply.WhichOneof("result") == "accepted", reply
                assert reply.idempotency_key == first.idempotency_key
                assert moves_timed() == timed + 1
                # An open again on the bound stream (same seat): answered, the stream goes on.
                assert (await opened(call, game_id, tokens[seat])).seat == seat
                other_seat, legal_now = await seat_to_act(stub, game_id, tokens)
                assert other_seat != seat

                # Another seat's open (its own valid token) on this seat's stream: it ends,
                # as that seat's move would end it; and it binds nothing of theirs.
                await call.write(open_message(game_id, tokens[other_seat]))
                code, text = await ended(call)
                assert code == grpc.StatusCode.PERMISSION_DENIED and "seat" in text
                # The same seat, another player (a token for that seat naming someone else).
                call = stub.SubmitActions()
                await opened(call, game_id, tokens[seat])
                someone = issue_token(key, PlayerClaims(game_id, seat, "someone-else"), 60)
                await call.write(open_message(game_id, someone))
                assert (await ended(call))[0] == grpc.StatusCode.PERMISSION_DENIED
                # Another game's open on a stream bound to this game.
                call = stub.SubmitActions()
                await opened(call, game_id, tokens[seat])
                await call.write(open_message(other.game_id, other.player_tokens[0]))
                assert (await ended(call))[0] == grpc.StatusCode.PERMISSION_DENIED
                # A token for another game than the open names: as a move with it ends.
                call = stub.SubmitActions()
                await call.write(open_message(game_id, other.player_tokens[0]))
                assert (await ended(call))[0] == grpc.StatusCode.PERMISSION_DENIED
                # A move on a stream opened for another seat: ends, not applied.
                call = stub.SubmitActions()
                await opened(call, game_id, tokens[seat])
                await call.write(
                    engine_pb2.SubmitActionsRequest(
                        submit=move(game_id, tokens[other_seat], other_seat, legal_now)
                    )
                )
                assert (await ended(call))[0] == grpc.StatusCode.PERMISSION_DENIED
                assert (await seat_to_act(stub, game_id, tokens))[1].version == legal_now.version

                # A token that does not verify ends the stream UNAUTHENTICATED, as the move's
                # would: missing, forged, malformed, expired.
                expired = issue_token(key, PlayerClaims(game_id, seat, f"p{seat}"), -1)
                forged = issue_token(b"not the engine's key", PlayerClaims(game_id, seat, "x"), 60)
                for bad in ("", "v2.junk", forged, expired):
                    call = stub.SubmitActions()
                    await call.write(open_message(game_id, bad))
                    code, text = await ended(call)
                    unary = await unary_status(stub, move(game_id, bad, seat, legal))
                    assert (code, text) == unary and code == grpc.StatusCode.UNAUTHENTICATED

                # A message with neither a move nor an open, or both: refused alone, and it
                # binds nothing (the unbound stream still ends at SUBMIT_FIRST_SECONDS).
                call = stub.SubmitActions()
                for message in (
                    engine_pb2.SubmitActionsRequest(),
                    engine_pb2.SubmitActionsRequest(
                        submit=move(game_id, tokens[seat], seat, legal),
                        open=engine_pb2.SubmitActionsOpen(
                            game_id=game_id, player_token=tokens[seat]
                        ),
                    ),
                ):
                    await call.write(message)
                    refused = (await call.read()).error
                    assert _code(refused.code) == grpc.StatusCode.INVALID_ARGUMENT
                    assert "exactly one" in refused.message, refused.message
                # An open over its limits: refused alone too, binding nothing.
                await call.write(open_message("g" * 65, tokens[seat]))
                refused = (await call.read()).error
                assert _code(refused.code) == grpc.StatusCode.INVALID_ARGUMENT
                assert "game_id" in refused.message, refused.message
                code, text = await asyncio.wait_for(ended(call), 10)
                assert code == grpc.StatusCode.UNAUTHENTICATED and "no move" in text

                # Opens count against the seat's bound on streams, as first moves do.
                bound = engine.app.settings.engine_max_streams_per_seat
                held = [stub.SubmitActions() for _ in range(bound)]
                for h in held:
                    await opened(h, game_id, tokens[seat])
                call = stub.SubmitActions()
                await call.write(open_message(game_id, tokens[seat]))
                assert (await ended(call))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
                call = stub.SubmitActions()  # nor may a move open one past it
                await call.write(
                    engine_pb2.SubmitActionsRequest(submit=move(game_id, tokens[seat], seat, legal))
                )
                assert (await ended(call))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
                # Another seat's bound is its own.
                await opened(stub.SubmitActions(), game_id, tokens[other_seat])
                # One closed, its place is free again (once the engine has seen it end).
                await held.pop().done_writing()
                for _ in range(100):
                    call = stub.SubmitActions()
                    await call.write(open_message(game_id, tokens[seat]))
                    reply = await call.read()
                    if reply is not grpc.aio.EOF and reply.HasField("opened"):
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise AssertionError("a closed stream's place was not freed")
                held.append(call)
                for h in held:
                    h.cancel()
        finally:
            await engine.stop()


async def test_an_opened_stream_lasts_until_its_tokens_expiry(
    nats_server: NatsHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An opened stream waits for its first move until its token expires (not only
    SUBMIT_FIRST_SECONDS), an open with a renewed token carries it on, and it ends
    UNAUTHENTICATED at the latest token's expiry: an open holds no stream past its token."""
    monkeypatch.setattr(engine_server, "SUBMIT_FIRST_SECONDS", 0.3)
    async with running_dice(nats_server, tmp_path):
        engine = await start_engine(nats_server, tmp_path, SigningKey(b"\x34" * 32))
        try:
            async with grpc.aio.insecure_channel(engine.address) as channel:
                stub = engine_pb2_grpc.EngineServiceStub(channel)
                created, seeds = await create_game(stub)
                game_id, tokens = created.game_id, list(created.player_tokens)
                for seat, token in enumerate(tokens):
                    await reveal_seed(stub, game_id, token, seeds[seat])
                seat, legal = await seat_to_act(stub, game_id, tokens)
                key = TOKEN_KEY.encode()

                def token_until(expires: int) -> str:  # a token expiring at `expires`
                    return issue_token(key, PlayerClaims(game_id, seat, f"p{seat}"), expires, 0)

                began = time.time()
                brief_until = math.ceil(began) + 2  # 2 to 3 s from now
                renewed_until = brief_until + 2
                call = stub.SubmitActions()
                await opened(call, game_id, token_until(brief_until))
                await asyncio.sleep(1.0)  # past SUBMIT_FIRST_SECONDS: still open
                renewed = token_until(renewed_until)
                answer = await opened(call, game_id, renewed)
                assert answer.expires_unix_ms == renewed_until * 1000
                await asyncio.sleep(brief_until + 0.3 - time.time())  # past the first token's
                reply = await exchange(call, move(game_id, renewed, seat, legal))
                assert reply.WhichOneof("result") == "accepted", reply
                code, text = await asyncio.wait_for(ended(call), 10)
                assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in text
                # It ended at the renewed token's expiry.
                assert time.time() > renewed_until - 0.2

                # An open's stream ends with its token, moves or none.
                short_until = math.ceil(time.time()) + 1
                call = stub.SubmitActions()
                await opened(call, game_id, token_until(short_until))
                code, text = await asyncio.wait_for(ended(call), 5)
                assert code == grpc.StatusCode.UNAUTHENTICATED and "expired" in text
                assert time.time() > short_until - 0.2
        finally:
            await engine.stop()


def verify_claims(token: str) -> PlayerClaims:
    return verify_token(TOKEN_KEY.encode(), token)
