"""The player ids the platform reserves: its bots'. Pure, and one definition for all who
speak it: the identity provider (no person is issued a token under one), matchmaking (its
bots' seats), the engine (no seat a person asks for is so named) and the audit (a seat so
named is the platform's bot and nothing else: docs/auditing.md, "The operator's own
seats")."""

from __future__ import annotations

BOT_PREFIX = "bot-"  # the platform's bots' player ids: `bot-<n>`; no person may hold one


def is_bot_id(player_id: str) -> bool:
    """Whether `player_id` is reserved for the platform's bots: `bot-` then digits."""
    rest = player_id[len(BOT_PREFIX) :]
    return player_id.startswith(BOT_PREFIX) and rest.isascii() and rest.isdigit()
