"""Which engine replica a game's calls go to: rendezvous (highest-random-weight) hashing of
the game id over the replicas' names. Pure, and one definition for every caller that knows a
game id (the gateway, the CLI, the bench), so they all send a game to the same replica.

Why route at all: every replica can serve every game (appends are optimistic-concurrency
checked, docs/operations.md "Scaling the engine"), but a replica serves a move from the game
it holds in memory and must first load (snapshot + replay) a game it does not. Sending a
game's calls to one replica keeps it warm there and loaded nowhere else.

Why rendezvous hashing: each (replica, game) pair gets a score from a hash, and the game
belongs to the replica with the highest score. Adding a replica moves to it only the games
it now out-scores the others on (about 1/N of them); removing one moves only its own games,
each to the replica that scored next; no table is kept or shared. The order of all the
replicas by score is also the fallback order when the owner is down.

The score is stable across releases (the tests pin vectors): changing it would move every
game at once, costing each a cold load on its next move (not a wrong answer).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

# Domain of the score's hash input, so the score is this function's alone.
DOMAIN = b"boulevard/engine-route/v1\x00"


def score(replica: str, game_id: str) -> int:
    """The weight of `replica` for `game_id`: the first 8 bytes of SHA-256 over the domain,
    the replica's name and the game id (each length-prefixed, so no two pairs share an
    input), as an unsigned big-endian integer."""
    r, g = replica.encode(), game_id.encode()
    data = DOMAIN + len(r).to_bytes(4, "big") + r + len(g).to_bytes(4, "big") + g
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def ranked(game_id: str, replicas: Sequence[str]) -> tuple[str, ...]:
    """The distinct `replicas` in the order `game_id`'s calls should try them: its owner
    first, then where it goes if the owner is down, and so on. Ties (which a 64-bit score
    makes astronomically rare) break by name, so the order never depends on the input's.
    Raises ValueError for an empty list."""
    unique = set(replicas)
    if not unique:
        raise ValueError("no replicas to route to")
    return tuple(sorted(unique, key=lambda r: (-score(r, game_id), r)))


def owner(game_id: str, replicas: Sequence[str]) -> str:
    """The replica that owns `game_id` among `replicas` (the first of `ranked`)."""
    return ranked(game_id, replicas)[0]


def replica_list(text: str) -> tuple[str, ...]:
    """The replicas of a comma-separated setting (`host:port,host:port`), spaces and empty
    items dropped, order kept, duplicates removed. One address: a list of one, so every
    game routes to it (today's behaviour)."""
    seen: dict[str, None] = {}
    for item in text.split(","):
        if item.strip():
            seen.setdefault(item.strip(), None)
    return tuple(seen)
