"""A seat played through the engine's public gRPC API, like any client app, by a game's bot
or by a person choosing (`Chooser`): the one loop `play_game`, `boulevard play`, client
apps and matchmaking's bot runner share.

A bot seat waits for something to happen in its game (WatchGame); each update carries the
seat's view and legal actions at that version, so the game's bot chooses from what its seat
may see and the seat submits the choice with the version it decided on — one message per
move on the seat's SubmitActions stream (`boulevard.seats.submitting`), opened as the seat
sits down (and again with each renewed token), before its first move.
A lost race (ABORTED) just means: look again.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from boulevard.api.v1 import (
    dice_pb2,
    dice_pb2_grpc,
    engine_pb2,
    engine_pb2_grpc,
    ledger_pb2,
    ledger_pb2_grpc,
)
from boulevard.audit.evidence import ACTION, RECLAIM, REVEAL, Accepted, Evidence, receipt_from_pb
from boulevard.audit.signing import SigningKey, reclaim_signing_bytes
from boulevard.contract.mapping import action_to_command, command_to_action, proto_to_view
from boulevard.games import get_game
from boulevard.games.base import Bot
from boulevard.seats.signing import signed_submit
from boulevard.seats.submitting import SubmitStream
from boulevard.seats.watching import WATCH_RETRIES, last_event, reopen_pause

OnEvent = Callable[[engine_pb2.WatchGameResponse], None]
Chooser = Callable[[Any, Sequence[Any], int], Awaitable[Any | None]]
"""A person's choice: (the seat's view, its legal commands, the version they are legal at)
-> one of the commands, or None when the game moved on before they chose (look again)."""


def new_client_seed() -> str:
    """A fresh client seed for a player (128 random bits)."""
    return secrets.token_hex(16)


async def reveal_seed(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, token: str, client_seed: str
) -> engine_pb2.RevealSeedResponse:
    """Reveal a seat's client seed to the engine (retried while the game is not created
    yet: a match's game appears shortly after the match)."""
    request = engine_pb2.RevealSeedRequest(
        game_id=game_id, player_token=token, client_seed=client_seed
    )
    for attempt in range(600):
        try:
            response: engine_pb2.RevealSeedResponse = await stub.RevealSeed(request)
            return response
        except grpc.aio.AioRpcError as err:
            if err.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.UNAVAILABLE):
                raise
            await asyncio.sleep(0.1 if attempt < 100 else 0.5)
    raise TimeoutError(f"game {game_id} did not appear to reveal a seed in")


async def reclaim_if_absent(
    stub: engine_pb2_grpc.EngineServiceStub, game_id: str, seat: int, token: str, key: SigningKey
) -> Accepted | None:
    """Take the seat back from the platform's bot when its time ran out in a turn-based
    game (ReclaimSeat, signed with the seat's key for the version seen; the bot may move in
    between: then sign again for the new version). Returns what the seat keeps in its
    evidence — the engine's receipt for the reclaim — or None when the seat was not
    absent."""
    for _attempt in range(20):
        game = await stub.GetGame(engine_pb2.GetGameRequest(game_id=game_id, player_token=token))
        mine = next((c for c in game.clocks if c.seat == seat), None)
        if mine is None or not mine.absent or game.status != engine_pb2.GAME_STATUS_ACTIVE:
            return None
        signature = key.sign(reclaim_signing_bytes(game_id, seat, game.version))
        request = engine_pb2.ReclaimSeatRequest(
            game_id=game_id, player_token=token, expected_version=game.version, signature=signature
        )
        try:
            reply = await stub.ReclaimSeat(request)
            return Accepted(RECLAIM, receipt_from_pb(reply.receipt), expected_version=game.version)
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.ABORTED:
                raise
    raise TimeoutError(f"could not take seat {seat} of game {game_id} back: the game moves on")


@dataclass
class SeatPlayer:
    stub: engine_pb2_grpc.EngineServiceStub
    game_id: str
    game_name: str
    seat: int
    token: str
    bot: Bot
    rng: random.Random
    key: SigningKey  # the seat's key, bound to it when the game was created
    moves: int = 0
    acted_at: int = -1  # the version of this seat's last move: older updates are stale
    client_seed: str | None = None  # revealed before playing, when given
    # The engine's signed receipt for each accepted move: proof, later, that the log held it.
    receipts: list[engine_pb2.Receipt] = field(default_factory=list)
    # What the engine signed it accepted for this seat (moves by idempotency key, the seed
    # reveal), with the receipts: the seat's evidence file (docs/auditing.md).
    accepted: list[Accepted] = field(default_factory=list)
    # A person choosing instead of the bot (`boulevard play`); everything else a seat does
    # (tokens, seeds, signatures) stays here, the same for bots and people.
    choose: Chooser | None = None
    # Where a fresh player token comes from when this one expires (matchmaking's GetTicket,
    # the engine's RenewPlayerToken, or the bot runner's own key); None: an expired token
    # ends the game for this seat with the engine's UNAUTHENTICATED.
    renew: Callable[[], Awaitable[str]] | None = None
    renewals: int = 0  # how many times this seat's token was renewed
    # The seat's moves go on one SubmitActions stream (unary calls to an engine without it).
    moves_stream: SubmitStream | None = None

    async def play(self) -> None:
        """Play until the game ends (revealing this seat's client seed first)."""
        if self.client_seed is not None:
            revealed = await reveal_seed(self.stub, self.game_id, self.token, self.client_seed)
            if revealed.HasField("receipt"):
                self.accepted.append(
                    Accepted(
                        REVEAL, receipt_from_pb(revealed.receipt), client_seed=self.client_seed
                    )
                )
        game = get_game(self.game_name)
        changed = asyncio.Event()
        changed.set()
        finished = asyncio.Event()
        latest: list[engine_pb2.WatchGameResponse] = []  # the newest update with a view

        start = await self.stub.GetGame(
            engine_pb2.GetGameRequest(game_id=self.game_id, player_token=self.token)
        )
        if start.status == engine_pb2.GAME_STATUS_FINISHED:
            return  # resumed after the end (a bot seat taken over late): nothing to do

        async def watch() -> None:
            # From the current version on: views of the past are of no use to a bot. A
            # seat's stream ends when its token expires: renew, and watch on from the next.
            # It breaks (UNAVAILABLE) when its engine replica stops: watch again from the
            # last version seen, which through `boulevard.platform.replicas` is served by
            # the game's next replica. That version comes again, with the view and legal
            # actions as the log has them now: the seat's word on what to do, where that
            # replica's own copy of the game may be stale (answering reads and refusing a
            # move once). `acted_at` keeps the seat from moving twice at one version.
            next_version = start.version
            seen = start.version  # the newest version a message brought (or GetGame's)
            failures = 0
            while True:
                # In settled bursts: one message per append rather than per event (a bot
                # reads only the newest view), and a move that owes a roll or a draw comes
                # with it, in one message and one view: the seat can only act after it.
                # A seat chooses from the view's fields (never its text board) and only on
                # its turn: the engine builds neither the text nor a waiting seat's view.
                request = engine_pb2.WatchGameRequest(
                    game_id=self.game_id,
                    player_token=self.token,
                    from_version=next_version,
                    bursts=True,
                    settled=True,
                    omit_rendered=True,
                    views_on_turn=True,
                )
                try:
                    async for update in self.stub.WatchGame(request):
                        failures = 0
                        event = last_event(update)
                        seen, next_version = event.version, event.version + 1
                        if update.HasField("view"):
                            latest[:] = [update]
                            changed.set()
                        else:
                            # Not this seat's turn (`views_on_turn`): nothing to act on, and
                            # an older update's turn is over. (An engine that ignores the
                            # option sends a view on every burst.)
                            latest.clear()
                        if event.type == "GameFinished":
                            finished.set()
                            return
                except grpc.aio.AioRpcError as err:
                    if err.code() == grpc.StatusCode.UNAVAILABLE and failures < WATCH_RETRIES:
                        await asyncio.sleep(reopen_pause(failures))
                        failures += 1
                        next_version = seen
                        continue
                    if err.code() != grpc.StatusCode.UNAUTHENTICATED or self.renew is None:
                        raise
                    self.token = await self.renew()
                    self.renewals += 1

        watcher = asyncio.create_task(watch())
        self.moves_stream = self.moves_stream or SubmitStream(self.stub)
        opened_with = ""  # the token the seat's SubmitActions stream was last opened with
        try:
            while not finished.is_set():
                if opened_with != self.token:
                    # At sit-down (while the watch opens), and with a renewed token: the
                    # seat's stream opened and bound before its next move, which then does
                    # not wait for a busy engine to take on a new call (an engine from
                    # before `open`: the move opens it, as before).
                    opened_with = self.token
                    await self.moves_stream.open(self.game_id, self.token)
                    continue
                await _first(changed.wait(), finished.wait(), watcher)
                if watcher.done() and watcher.exception() is not None:
                    raise watcher.exception()  # type: ignore[misc]
                if opened_with != self.token:
                    continue  # renewed while waiting (the watch's renewal): open, then act
                changed.clear()
                update = latest.pop() if latest else None
                try:
                    again = await self._act(game, update)
                    while again:
                        again = await self._act(game)
                except grpc.aio.AioRpcError as err:
                    if err.code() != grpc.StatusCode.UNAUTHENTICATED or self.renew is None:
                        raise
                    self.token = await self.renew()  # expired: get a fresh one, go on
                    self.renewals += 1
                    changed.set()
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
            await self.moves_stream.close()

    async def _act(self, game: Any, update: engine_pb2.WatchGameResponse | None = None) -> bool:
        """Make one move if this seat has one, from a WatchGame update (its view and legal
        actions) or, without one, from ListLegalActions + GetGame. True: look again now with
        fresh calls; False: wait for the next update."""
        if update is not None and (update.legal_actions or self.seat not in update.to_act):
            version = last_event(update).version
            if not update.legal_actions or version <= self.acted_at:
                return False  # not this seat's turn, or a version from before our last move
            actions, view_pb = update.legal_actions, update.view
        else:  # the first look, or an engine whose updates carry no legal actions
            legal = await self.stub.ListLegalActions(
                engine_pb2.ListLegalActionsRequest(game_id=self.game_id, player_token=self.token)
            )
            if not legal.actions:
                return False
            got = await self.stub.GetGame(
                engine_pb2.GetGameRequest(game_id=self.game_id, player_token=self.token)
            )
            if got.version != legal.version:
                return True  # the game moved between the two calls: look again
            version, actions, view_pb = legal.version, legal.actions, got.view
        view = proto_to_view(game, view_pb)
        commands = [action_to_command(game, a) for a in actions]
        if self.choose is None:
            choice = self.bot(view, commands, self.seat, self.rng)
        elif (choice := await self.choose(view, commands, version)) is None:
            return True  # the game moved on while the person was choosing: look again
        request = signed_submit(
            self.game_id,
            self.token,
            self.seat,
            self.key,
            command_to_action(game, choice),
            version,
            uuid.uuid4().hex,
        )
        for attempt in range(SUBMIT_ATTEMPTS):
            try:
                reply = await self._submit(request)
                break
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.ABORTED:
                    # Someone else moved first: the stream brings the new state (without
                    # one, look again now).
                    return update is None
                if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                    return True  # e.g. a move that changes nothing: look again with fresh calls
                if err.code() != grpc.StatusCode.UNAVAILABLE or attempt == SUBMIT_ATTEMPTS - 1:
                    raise
                # The outcome may be unknown: the same request (same idempotency key) is
                # applied at most once, so retrying it is safe (docs/security.md).
                await asyncio.sleep(0.5 * 2**attempt)
        self.moves += 1
        self.receipts.append(reply.receipt)
        if reply.HasField("receipt"):
            self.accepted.append(
                Accepted(
                    ACTION, receipt_from_pb(reply.receipt), idempotency_key=request.idempotency_key
                )
            )
        self.acted_at = version
        # Moved: the stream brings what follows (without one, look again now).
        return update is None

    async def _submit(
        self, request: engine_pb2.SubmitActionRequest
    ) -> engine_pb2.SubmitActionResponse:
        """SubmitAction, on the seat's SubmitActions stream (as the unary call answers)."""
        if self.moves_stream is None:
            self.moves_stream = SubmitStream(self.stub)
        return await self.moves_stream.submit(request)

    def evidence(self) -> Evidence:
        """This seat's evidence so far: what the engine signed it accepted (add the dice and
        ledger heads seen with `keep_heads`); `Evidence.dumps()` is the file's text."""
        return Evidence(self.game_id, self.seat, list(self.accepted))


async def keep_heads(
    evidence: Evidence,
    dice: dice_pb2_grpc.DiceServiceStub | None = None,
    ledger: ledger_pb2_grpc.LedgerServiceStub | None = None,
    timeout: float = 10.0,
    anchored_within: float = 30.0,
) -> bool:
    """Add to `evidence` the signed heads the services show: the game's dice log heads, and
    the ledger's tree head once it covers the game's anchor (the entry that posts its
    GameFinished chain head, docs/ledger.md "Game anchors"). The ledger signs a head about a
    second after it posts, so this waits up to `anchored_within` seconds for one; if none
    covers the anchor by then, the latest head is kept (or none, if nothing is signed yet)
    and False is returned. Kept, they are what a rewritten and re-signed dice log or journal
    contradicts."""
    if dice is not None:
        heads = await dice.GetLogHeads(
            dice_pb2.GetLogHeadsRequest(game_id=evidence.game_id), timeout=timeout
        )
        evidence.dice_heads.extend(h.SerializeToString() for h in heads.heads)
    if ledger is None:
        return True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + anchored_within
    while True:
        anchor = await _anchor_seq(ledger, evidence.game_id, timeout)
        head = await _ledger_head(ledger, timeout)
        covered = anchor > 0 and head is not None and head.tree_size >= anchor
        if covered or loop.time() >= deadline:
            if head is not None:
                evidence.ledger_heads.append(head.SerializeToString())
            return covered
        await asyncio.sleep(0.2)


async def _anchor_seq(
    ledger: ledger_pb2_grpc.LedgerServiceStub, game_id: str, timeout: float
) -> int:
    """The journal position of the game's anchor entry (0: not posted yet)."""
    token = ""
    while True:
        page = await ledger.ListEntries(
            ledger_pb2.ListEntriesRequest(game_id=game_id, page_size=1000, page_token=token),
            timeout=timeout,
        )
        for entry in page.entries:
            if entry.event_type == "GameFinished" and not entry.postings:
                return int(entry.seq)
        if not page.next_page_token:
            return 0
        token = page.next_page_token


async def _ledger_head(
    ledger: ledger_pb2_grpc.LedgerServiceStub, timeout: float
) -> ledger_pb2.SignedTreeHead | None:
    """The ledger's latest signed tree head; None when it has signed none yet."""
    try:
        got: ledger_pb2.GetTreeHeadResponse = await ledger.GetTreeHead(
            ledger_pb2.GetTreeHeadRequest(), timeout=timeout
        )
    except grpc.aio.AioRpcError as err:
        if err.code() != grpc.StatusCode.NOT_FOUND:
            raise
        return None
    return got.head


SUBMIT_ATTEMPTS = 6  # UNAVAILABLE is retried with backoff for about 15 s


async def _first(*aws: Any) -> None:
    tasks = [a if isinstance(a, asyncio.Task) else asyncio.ensure_future(a) for a in aws]
    _done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for t in pending:
        if t not in aws:
            t.cancel()


async def play_game(
    channel: grpc.aio.Channel,
    game_id: str,
    game_name: str,
    tokens: list[str],
    keys: list[SigningKey],
    bot_name: str = "heuristic",
    seed: int | None = None,
    client_seeds: list[str] | None = None,
) -> list[SeatPlayer]:
    """Play every seat of a game with bots until it ends, signing each seat's moves with
    its key (`keys[seat]`, the keys the game was created with). `client_seeds` (per seat)
    are the seeds the seats committed to when the game was made: each seat reveals its own
    first."""
    stub = engine_pb2_grpc.EngineServiceStub(channel)
    game = get_game(game_name)
    rng = random.Random(seed)
    players = [
        SeatPlayer(
            stub,
            game_id,
            game_name,
            seat,
            token,
            game.bots[bot_name],
            random.Random(rng.random()),
            keys[seat],
            client_seed=client_seeds[seat] if client_seeds is not None else None,
        )
        for seat, token in enumerate(tokens)
    ]
    await asyncio.gather(*(p.play() for p in players))
    return players
