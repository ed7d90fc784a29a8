"""The seats the operator itself fills, checked so they leave it no choice (docs/auditing.md,
"The operator's own seats"). Pure: each check returns what is wrong, or None.

The operator holds the bot key and each bot seat's client seed. So:

- a player id `bot-<n>` is the platform's bot and nothing else: a seat so named that is not
  a bot seat (a "human" seat whose key and token the operator holds) or a bot seat named
  otherwise would let the operator pass its own seats off as someone else's;
- with the bot key known (`--trust`, or the matchmaker's word), every bot seat carries it;
- a bot seat that did not reveal its seed is a choice: the operator sees the humans'
  reveals first and may withhold the bot's, picking between two outcome streams. A human
  seat may miss the deadline (a network, a closed laptop); a bot may not.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from boulevard.contract.players import BOT_PREFIX, is_bot_id
from boulevard.games.base import GameCreated


def seat_problem(created: GameCreated, bot_keys: Collection[str] = ()) -> str | None:
    """What is wrong with the seats GameCreated binds, as far as the operator's own seats
    go; None when nothing is. `bot_keys`: the platform's bot keys (pinned), if known."""
    for s in created.seats:
        if s.player_id.startswith(BOT_PREFIX) and not (s.bot and is_bot_id(s.player_id)):
            return (
                f"seat {s.seat} is {s.player_id!r}, an id reserved for the platform's bots, "
                "but is not a bot seat: the operator named a seat it holds as someone else's"
            )
        if s.bot and not is_bot_id(s.player_id):
            return f"seat {s.seat} is a bot seat named {s.player_id!r}, not bot-<n>"
        if s.bot and bot_keys and s.public_key not in bot_keys:
            return (
                f"bot seat {s.seat} is bound to key {s.public_key}, not the platform's bot "
                f"key ({', '.join(sorted(bot_keys))})"
            )
    return None


def withheld_bot_reveal(created: GameCreated, missing_seats: Iterable[int]) -> str | None:
    """A bot seat among those that did not reveal their committed seed; None if none."""
    bots = {s.seat for s in created.seats if s.bot}
    withheld = sorted(set(missing_seats) & bots)
    if not withheld:
        return None
    return (
        f"bot seat {withheld[0]} did not reveal its client seed: the operator holds it and "
        "could withhold it after seeing the other seats' reveals (a choice between two "
        "outcome streams)"
    )
