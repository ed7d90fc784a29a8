"""Bot seats: the seat a bot takes in a match. Bot seats are the matchmaker's own: their
client seeds come from its key (`bot_client_seed`), committed at match time like a
player's and revealed by the bot runner (`botrunner.BotRunner`, which plays them under a
lease), and each is bound to the operator's bot key, so an auditor sees which seats the
operator played (docs/auditing.md)."""

from __future__ import annotations

import hashlib
import hmac

from boulevard.api.v1 import events_pb2
from boulevard.fairness import client_seed_commitment
from services.matchmaking.matcher import bot_player_id


def bot_client_seed(key: bytes, game_id: str, seat: int) -> str:
    """The client seed of a bot seat: made by whoever plays the bots, from a key it holds,
    so the matchmaker can commit to it at match time (SHA-256 in MatchFormed) and the bot
    runner can reveal it after GameCreated, like any player. Unknown to the dice service
    when it commits its server seed."""
    message = f"boulevard bot client seed\0{game_id}\0{seat}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


class BotSeats:
    def __init__(self, token_key: bytes, bot_public_key: str = "") -> None:
        self.token_key = token_key
        # Hex of the operator's bot key: bound to every bot seat (docs/auditing.md).
        self.bot_public_key = bot_public_key

    def seat(self, match_id: str, seat: int, nth: int) -> events_pb2.MatchSeat:
        """Seat `seat` of the match for its `nth` bot (1-based). A bot's seed is committed
        now, like a player's, and revealed by whoever plays the bots (the bot runner
        derives the same seed)."""
        return events_pb2.MatchSeat(
            seat=seat,
            player_id=bot_player_id(nth),
            bot=True,
            client_seed_commitment=client_seed_commitment(
                bot_client_seed(self.token_key, match_id, seat)
            ),
            public_key=self.bot_public_key,
        )
