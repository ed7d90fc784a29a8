"""Ratings follow finished games: a durable consumer on GAMES reads `GameFinished` events.

Each GAMES message is an `EventCommit`; each event's data an `EventEnvelope` whose payload
(type "GameFinished") is codec JSON. For a finished game:

1. the rating change is computed once and stored under `g.<game_id>` (created, never
   overwritten: a redelivery, a replay or a second replica finds and reuses it);
2. each player's rating moves by that change, by revision, and records the game id among
   its recent games, so a player is never moved twice for one game;
3. only then is the message acked (with the others of its batch). A crash anywhere in
   between redelivers it, and steps 1-2 find their work done.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import FetchTimeoutError

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.contract.players import BOT_PREFIX
from boulevard.eventlog.jetstream import decode_commit
from boulevard.games.base import GameFinished
from boulevard.games.codec import Codec
from boulevard.messaging.poison import poisoned
from boulevard.platform.errors import nats_unavailable
from services.matchmaking.ratings import DEFAULT_MU, DEFAULT_SIGMA, Skill, rate
from services.matchmaking.store import Conflict, Records, rating_key, result_key

log = structlog.get_logger(__name__)

RECENT_GAMES = 32
MIN_SIGMA = 0.001
_CODEC = Codec(())


class RatingFeed:
    def __init__(
        self,
        nc: NATS,
        ratings: Records,
        *,
        games_stream: str,
        games_prefix: str,
        durable: str,
        fetch_batch: int = 256,
    ) -> None:
        self.js = nc.jetstream()
        self.ratings = ratings
        self.games_stream = games_stream
        self.games_prefix = games_prefix
        self.durable = durable
        self.fetch_batch = fetch_batch
        self.games_rated = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._sub = await self.js.pull_subscribe(
            f"{self.games_prefix}.>",
            durable=self.durable,
            stream=self.games_stream,
            config=ConsumerConfig(
                ack_policy=AckPolicy.ALL,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=30,
                max_ack_pending=10_000,
            ),
        )
        self._task = asyncio.create_task(self._consume(), name="mm-ratings")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        with contextlib.suppress(Exception):
            await self._sub.unsubscribe()

    async def _consume(self) -> None:
        while True:
            try:
                msgs = await self._sub.fetch(self.fetch_batch, timeout=1.0)
            except (FetchTimeoutError, TimeoutError):
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnecting: try again shortly
                log.warning("fetch from GAMES failed", error=str(exc))
                await asyncio.sleep(0.2)
                continue
            # AckPolicy.ALL: acking the last message handled acks the batch up to it (one
            # ack per batch, not per GAMES event). A failure stops the batch there; the rest
            # comes back.
            done: Msg | None = None
            for m in msgs:
                try:
                    await self.process(m)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if nats_unavailable(exc):  # KV unreachable: let it come back later
                        log.warning("rating update failed; will retry", error=str(exc))
                        with contextlib.suppress(Exception):
                            await m.nak(delay=1.0)
                        break
                    # Anything else would fail again on every redelivery and hold back
                    # every later game: the message is poison, skipped.
                    poisoned("matchmaking.ratings", "unratable", subject=m.subject, error=exc)
                done = m
            if done is not None:
                await done.ack()

    async def process(self, msg: Msg) -> None:
        game_id = msg.subject.removeprefix(f"{self.games_prefix}.")
        try:
            events = decode_commit(game_id, msg.data)
        except Exception as exc:  # not ours to judge; the engine's log is evidence
            poisoned("matchmaking.ratings", "undecodable", subject=msg.subject, error=exc)
            return
        for event in events:
            if event.type not in ("GameFinished", ""):
                continue
            try:
                env = events_pb2.EventEnvelope.FromString(event.data)
                if env.type != "GameFinished":
                    continue
                finished = _CODEC.loads(env.payload)
            except Exception as exc:  # a bad event must not stop the feed
                poisoned("matchmaking.ratings", "undecodable", subject=msg.subject, error=exc)
                continue
            if isinstance(finished, GameFinished):
                await self.apply(env.game_id or game_id, env.game, finished)

    async def apply(self, game_id: str, game: str, finished: GameFinished) -> None:
        result = await self._result(game_id, game, finished)
        if result is None:
            return
        for before, after in zip(result.before, result.after, strict=True):
            await self._move(game_id, before, after)
        self.games_rated += 1
        log.info("ratings updated", game_id=game_id, game=game, players=len(result.after))

    async def _result(
        self, game_id: str, game: str, finished: GameFinished
    ) -> pb.RatingResult | None:
        found = await self.ratings.get(result_key(game_id), pb.RatingResult)
        if found is not None:
            return found[0]
        players = finished.player_ids
        if len(players) < 2:
            return None
        humans = {p for p in players if p and not p.startswith(BOT_PREFIX)}
        if len(humans) != sum(1 for p in players if p and not p.startswith(BOT_PREFIX)):
            log.error("a player holds two seats; game not rated", game_id=game_id)
            return None
        skills: dict[str, pb.PlayerRating] = {}
        for p in humans:
            got = await self.ratings.get(rating_key(game, p), pb.PlayerRating)
            skills[p] = got[0] if got else pb.PlayerRating(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)
        before = [Skill(skills[p].mu, skills[p].sigma) if p in skills else Skill() for p in players]
        try:
            after = rate(before, finished.ranking)
        except ValueError as exc:
            log.error("bad ranking; game not rated", game_id=game_id, error=str(exc))
            return None
        result = pb.RatingResult(game_id=game_id, game=game)
        for p, b, a in zip(players, before, after, strict=True):
            if p in humans:
                result.before.append(_rating(p, game, b))
                result.after.append(_rating(p, game, a))
        try:
            await self.ratings.create(result_key(game_id), result)
        except Conflict:
            found = await self.ratings.get(result_key(game_id), pb.RatingResult)
            if found is None:
                raise
            return found[0]
        return result

    async def _move(self, game_id: str, before: pb.PlayerRating, after: pb.PlayerRating) -> None:
        key = rating_key(after.game, after.player_id)
        while True:
            got = await self.ratings.get(key, pb.PlayerRating)
            current = (
                got[0]
                if got
                else pb.PlayerRating(
                    player_id=after.player_id, game=after.game, mu=DEFAULT_MU, sigma=DEFAULT_SIGMA
                )
            )
            if game_id in current.recent_games:
                return
            # The change this game made, applied to the rating as it is now (another game may
            # have moved it since the change was computed).
            current.mu += after.mu - before.mu
            current.sigma = max(MIN_SIGMA, current.sigma + after.sigma - before.sigma)
            current.games += 1
            recent = [*current.recent_games, game_id][-RECENT_GAMES:]
            del current.recent_games[:]
            current.recent_games.extend(recent)
            current.ordinal = current.mu - 3 * current.sigma
            try:
                if got is None:
                    await self.ratings.create(key, current)
                else:
                    await self.ratings.update(key, current, got[1])
                return
            except Conflict:
                continue


def _rating(player_id: str, game: str, skill: Skill) -> pb.PlayerRating:
    return pb.PlayerRating(player_id=player_id, game=game, mu=skill.mu, sigma=skill.sigma)
