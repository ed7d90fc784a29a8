"""Ratings follow finished games, found through the engine's games index.

The engine writes a game's summary to its games index (KV `engine_games`) when it creates
the game and again, `"status": "finished"`, after it has appended `GameFinished` (the last
event of a game's log): two or three messages a game, where GAMES has two or more a move.
A durable consumer of matchmaking's on the index's stream is the feed's position. For each
summary the feed reads the game's last GAMES message (one direct get): the `GameFinished`
there, not the summary, is what it rates, so a summary says only where to look.

- **Nothing missed.** A summary whose game is not finished in its log (a game just made,
  a halted one, or a finished one whose end the engine never wrote to the index: it
  crashed, or NATS failed the put, between the append and the put) is not acknowledged but
  looked at again after about its own age (`recheck_min`..`recheck_max` seconds). Until its
  game ends in the log it stays pending; a later summary of the same key replaces it in the
  bucket (history 1), and the server then drops the pending one.
- **Nothing rated twice.** The rating change is computed once and stored under
  `g.<game_id>` (created, never overwritten: a redelivery or a second replica reuses it);
  each player's rating moves by it by revision and records the game among its recent
  games, so a crash in between moves no player twice; then `d.<game_id>` records that the
  game is rated, so a summary of it delivered again later (written again by the engine,
  or the durable made anew) changes nothing. The summary is acked only then.
- **Games from before.** The index holds every game, so the durable's first delivery
  replays one summary per game ever made. Releases before read GAMES with the durable
  `ratings_consumer` and rated every `GameFinished` up to its ack floor; that floor is
  recorded once, at this release's first start (`feed.legacy_floor` in the ratings
  bucket), and a game whose `GameFinished` lies at or below it is left as rated.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import FetchTimeoutError, NotFoundError

from boulevard.api.v1 import events_pb2
from boulevard.api.v1 import matchmaking_pb2 as pb
from boulevard.contract.players import BOT_PREFIX
from boulevard.eventlog.jetstream import decode_commit
from boulevard.games.base import GameFinished
from boulevard.games.codec import Codec
from boulevard.messaging.poison import poisoned
from boulevard.platform.errors import nats_unavailable
from services.matchmaking.ratings import DEFAULT_MU, DEFAULT_SIGMA, Skill, rate
from services.matchmaking.store import Conflict, Records, applied_key, rating_key, result_key

log = structlog.get_logger(__name__)

RECENT_GAMES = 32
MIN_SIGMA = 0.001
LEGACY_FLOOR_KEY = "feed.legacy_floor"  # in the ratings bucket: see the module docstring
REMOVING_OPERATIONS = frozenset({"DEL", "PURGE"})  # the KV-Operation header of a removal
RETRY_SECONDS = 1.0  # NATS away, or the index not made yet: try again this soon
_CODEC = Codec(())


@dataclass(frozen=True, slots=True)
class Finished:
    """A game's end as its log holds it: the GAMES sequence of the message, the envelope's
    game name and id, and the event."""

    sequence: int
    game_id: str
    game: str
    event: GameFinished


def recheck_delay(age_seconds: float, least: float, most: float) -> float:
    """How long to wait before looking again at a game not finished yet: about as long as
    its summary has existed, within [least, most]. A game is looked at O(log(its age))
    times, then every `most` seconds, so the games left running for ever cost little; a
    game whose end the index missed is rated within about its age (at most `most`)."""
    return min(most, max(least, age_seconds))


class RatingFeed:
    def __init__(
        self,
        nc: NATS,
        ratings: Records,
        *,
        games_stream: str,
        games_prefix: str,
        index_bucket: str,
        durable: str,
        legacy_durable: str,
        fetch_batch: int = 256,
        recheck_min: float = 30.0,
        recheck_max: float = 6 * 3600.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.js = nc.jetstream()
        self.ratings = ratings
        self.games_stream = games_stream
        self.games_prefix = games_prefix
        self.index_bucket = index_bucket
        self.durable = durable
        self.legacy_durable = legacy_durable
        self.fetch_batch = fetch_batch
        self.recheck_min = recheck_min
        self.recheck_max = recheck_max
        self.clock = clock
        self.games_rated = 0
        self.legacy_floor = 0
        self.subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def index_stream(self) -> str:
        return f"KV_{self.index_bucket}"

    async def start(self) -> None:
        """Start the feed. It subscribes in its own task: the engine makes the index, and
        may start after matchmaking."""
        self._task = asyncio.create_task(self._run(), name="mm-ratings")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                self.legacy_floor = await self._legacy_floor()
                sub = await self.js.pull_subscribe(
                    f"$KV.{self.index_bucket}.>",
                    durable=self.durable,
                    stream=self.index_stream,
                    config=ConsumerConfig(
                        ack_policy=AckPolicy.EXPLICIT,
                        deliver_policy=DeliverPolicy.ALL,
                        ack_wait=30,
                        # Every game not finished yet is pending: no bound may stop the
                        # delivery of the next game's end.
                        max_ack_pending=-1,
                    ),
                )
                break
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # NATS away, or the engine has not made the index yet
                log.info("ratings feed waits for the games index", error=repr(exc))
                await asyncio.sleep(RETRY_SECONDS)
        self.subscribed.set()
        try:
            await self._consume(sub)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _legacy_floor(self) -> int:
        """The GAMES sequence up to which the feed of releases before rated every game:
        read from the old durable at this release's first start, then kept (create-only)."""
        found = await self.ratings.get_raw(LEGACY_FLOOR_KEY)
        if found is not None:
            return int(found[0])
        floor = 0
        if self.legacy_durable:
            try:
                info = await self.js.consumer_info(self.games_stream, self.legacy_durable)
                floor = int(info.ack_floor.stream_seq or 0) if info.ack_floor else 0
            except NotFoundError:
                floor = 0  # a platform that never ran the old feed: nothing rated before
        try:
            await self.ratings.create_raw(LEGACY_FLOOR_KEY, str(floor).encode())
        except Conflict:  # another replica recorded it first
            found = await self.ratings.get_raw(LEGACY_FLOOR_KEY)
            assert found is not None
            return int(found[0])
        log.info("ratings feed moved to the games index", legacy_floor=floor)
        return floor

    async def _consume(self, sub: JetStreamContext.PullSubscription) -> None:
        while True:
            try:
                msgs = await sub.fetch(self.fetch_batch, timeout=1.0)
            except (FetchTimeoutError, TimeoutError):
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reconnecting: try again shortly
                log.warning("fetch from the games index failed", error=str(exc))
                await asyncio.sleep(RETRY_SECONDS / 5)
                continue
            for m in msgs:
                try:
                    await self.process(m)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if nats_unavailable(exc):  # KV or GAMES unreachable: look again soon
                        log.warning("rating update failed; will retry", error=str(exc))
                        with contextlib.suppress(Exception):
                            await m.nak(delay=RETRY_SECONDS)
                        continue
                    # Anything else would fail again on every redelivery: the summary is
                    # poison, and its game is not rated.
                    poisoned("matchmaking.ratings", "unratable", subject=m.subject, error=exc)
                    with contextlib.suppress(Exception):
                        await m.ack()

    async def process(self, msg: Msg) -> None:
        """One summary of the games index: rate its game if its log ends finished (then
        ack), else look again later (nak with a delay)."""
        game_id = msg.subject.removeprefix(f"$KV.{self.index_bucket}.")
        if (msg.headers or {}).get("KV-Operation") in REMOVING_OPERATIONS:
            await msg.ack()  # a removed summary: its key's next put, if any, comes anew
            return
        try:
            status = json.loads(msg.data)["status"]
        except Exception as exc:  # not a summary the engine wrote
            poisoned("matchmaking.ratings", "undecodable", subject=msg.subject, error=exc)
            await msg.ack()
            return
        # A game just made is not looked up: it cannot have ended yet (its end writes a
        # summary of its own). Any later delivery is looked up, whatever it says.
        finished = None
        if status != "active" or msg.metadata.num_delivered > 1:
            finished = await self.finished(game_id)
        if finished is None:
            await msg.nak(delay=self._later(msg))
            return
        if finished.sequence > self.legacy_floor:
            await self.apply(finished.game_id, finished.game, finished.event)
        await msg.ack()

    def _later(self, msg: Msg) -> float:
        stamp = msg.metadata.timestamp
        age = self.clock() - stamp.timestamp() if stamp is not None else 0.0
        return recheck_delay(age, self.recheck_min, self.recheck_max)

    async def finished(self, game_id: str) -> Finished | None:
        """The game's `GameFinished` if its log ends with one (it is always the last
        event), else None (running, halted, or no log under that id)."""
        subject = f"{self.games_prefix}.{game_id}"
        try:
            last = await self.js.get_last_msg(self.games_stream, subject)
        except NotFoundError:
            return None
        try:
            events = decode_commit(game_id, last.data or b"")
        except Exception as exc:  # not ours to judge; the engine's log is evidence
            poisoned("matchmaking.ratings", "undecodable", subject=subject, error=exc)
            return None
        for event in events:
            if event.type not in ("GameFinished", ""):
                continue
            try:
                env = events_pb2.EventEnvelope.FromString(event.data)
                if env.type != "GameFinished":
                    continue
                done = _CODEC.loads(env.payload)
            except Exception as exc:  # a bad event must not stop the feed
                poisoned("matchmaking.ratings", "undecodable", subject=subject, error=exc)
                continue
            if isinstance(done, GameFinished):
                return Finished(int(last.seq or 0), env.game_id or game_id, env.game, done)
        return None

    async def apply(self, game_id: str, game: str, finished: GameFinished) -> None:
        """Rate a finished game once: its change (`g.<id>`), each player moved by it, then
        `d.<id>`, after which any later delivery of the game changes nothing however many
        games its players have played since (a player's `recent_games` holds only the
        last 32). `games_rated` counts the games found rated, now or before."""
        if await self.ratings.get_raw(applied_key(game_id)) is not None:
            self.games_rated += 1
            return
        result = await self._result(game_id, game, finished)
        if result is None:
            return
        for before, after in zip(result.before, result.after, strict=True):
            await self._move(game_id, before, after)
        with contextlib.suppress(Conflict):  # another replica finished it first
            await self.ratings.create_raw(applied_key(game_id), b"rated")
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
