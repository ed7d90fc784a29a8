"""The ledger's contract: its signed tree heads on the wire, and the money a game's own
events say each seat holds (`money_trail`), what a ledger is reconciled against. Pure: the
ledger service, its client and the audits share it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from boulevard.accounting import SignedTreeHead, TreeHead
from boulevard.api.v1 import events_pb2, ledger_pb2
from boulevard.games import REGISTRY
from boulevard.games.base import PLATFORM_EVENTS
from boulevard.games.codec import Codec


def head_to_pb(sth: SignedTreeHead) -> ledger_pb2.SignedTreeHead:
    h = sth.head
    return ledger_pb2.SignedTreeHead(
        tree_size=h.tree_size,
        root_hash=h.root_hash,
        timestamp_unix_ms=h.timestamp_unix_ms,
        key_id=h.key_id,
        signature=sth.signature,
    )


def head_from_pb(pb: ledger_pb2.SignedTreeHead) -> SignedTreeHead:
    return SignedTreeHead(
        TreeHead(pb.tree_size, bytes(pb.root_hash), pb.timestamp_unix_ms, pb.key_id),
        bytes(pb.signature),
    )


def money_trail(envelopes: Iterable[events_pb2.EventEnvelope]) -> list[tuple[int, dict[int, int]]]:
    """(version, money per seat after that event) for each event of one game, in order,
    from the game's own rules: `REGISTRY[game].evolve` over the decoded payloads."""
    trail: list[tuple[int, dict[int, int]]] = []
    game: Any = None
    codec: Codec | None = None
    state: Any = None
    for env in envelopes:
        if game is None:
            if env.game not in REGISTRY:
                raise KeyError(f"unknown game {env.game!r}")
            game = REGISTRY[env.game]
            codec = Codec(game.event_types)
            state = game.initial_state()
        assert codec is not None
        event = codec.loads(env.payload)
        if not isinstance(event, PLATFORM_EVENTS):  # the engine's own, not the game's
            state = game.evolve(state, event)
        trail.append((env.version, dict(game.money(state))))
    return trail
