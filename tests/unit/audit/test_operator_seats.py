"""The seats the operator fills itself leave it no choice (issue 25): a bot seat that keeps
its seed back fails the audit (the operator saw the humans' reveals first), a `bot-<n>` id
on a seat that is not the platform's bot fails it, and so does a bot seat bound to a key
other than the pinned bot key."""

from __future__ import annotations

import asyncio

from boulevard.audit.game_log import audit_game_log
from boulevard.audit.seats import is_bot_id
from boulevard.audit.signing import SigningKey
from boulevard.fairness import client_seed_commitment
from boulevard.platform.auth import verify_token
from services.engine.engine import SeatRequest
from tests.unit.audit.test_game_log import envelopes, fails_at
from tests.unit.engine.test_opening import KEY, KEYS, SEEDS, Clock, make_engine

BOT_KEY = SigningKey(bytes([9]) * 32)


def seats_with_a_bot(bot_id: str = "bot-1", bot: bool = True) -> list[SeatRequest]:
    """Seat 0 a player, seat 1 the platform's bot (both committed to a seed)."""
    return [
        SeatRequest(0, "p0", client_seed_commitment(SEEDS[0]), public_key=KEYS[0].public_hex),
        SeatRequest(
            1, bot_id, client_seed_commitment(SEEDS[1]), bot, public_key=BOT_KEY.public_hex
        ),
    ]


async def opened(seats: list[SeatRequest], reveal: tuple[int, ...]) -> list[bytes]:
    """A game opened with `seats`, the seats in `reveal` revealing, the rest left to the
    deadline (the sweeper then fixes the seeds), through to the first chance."""
    clock = Clock()
    engine = make_engine(clock)
    created = await engine.create_game("m1", "las_vegas", seats, match_id="m1")
    for seat in reveal:
        await engine.reveal_seed("m1", verify_token(KEY, created.tokens[seat]), SEEDS[seat])
    if len(reveal) < len(seats):
        clock.now += 31_000
        await engine.sweep_reveals()
    return [r.data for r in await engine.store.read("m1")]


def test_a_bot_seat_that_kept_its_seed_back_fails_where_the_seeds_are_fixed() -> None:
    honest = asyncio.run(opened(seats_with_a_bot(), reveal=(0, 1)))
    report = audit_game_log("m1", honest, bot_key=BOT_KEY.public_hex)
    assert report.bot_seats == (1,) and report.chance >= 1
    withheld = asyncio.run(opened(seats_with_a_bot(), reveal=(0,)))
    fixed = next(e.version for e in envelopes(withheld) if e.type == "ClientSeedsFixed")
    fails_at(withheld, fixed, "bot seat 1 did not reveal its client seed")


def test_a_human_seat_may_still_miss_the_deadline() -> None:
    log = asyncio.run(opened(seats_with_a_bot(), reveal=(1,)))
    report = audit_game_log("m1", log)
    assert report.published is not None and report.published.missing_seats == (0,)


def test_a_bot_id_on_a_seat_that_is_not_the_platforms_bot_fails_at_the_opening() -> None:
    """CreateGame took a `bot-1` seat as a human one (bot: false) with a key the operator
    chose; its audits passed and said "bot seats []"."""
    log = asyncio.run(opened(seats_with_a_bot(bot=False), reveal=(0, 1)))
    fails_at(log, 1, "reserved for the platform's bots")
    unnamed = asyncio.run(opened(seats_with_a_bot(bot_id="robot"), reveal=(0, 1)))
    fails_at(unnamed, 1, "not bot-<n>")


def test_a_bot_seat_must_carry_the_pinned_bot_key() -> None:
    log = asyncio.run(opened(seats_with_a_bot(), reveal=(0, 1)))
    other = SigningKey(bytes([8]) * 32).public_hex
    fails_at(log, 1, "not the platform's bot key", bot_key=other)


def test_bot_ids_are_bot_dash_digits() -> None:
    assert is_bot_id("bot-1") and is_bot_id("bot-12")
    assert not any(is_bot_id(x) for x in ("bot-", "bot-x", "bot-1a", "bot-١", "robot-1", "p0"))
