"""Sources of randomness for the engine: the dice service, or (pure tests) a local rng."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from boulevard.games.base import ChanceRequest, ChanceResolved, RandomSource
from boulevard.games.playout import resolve_locally
from services.engine.dice_client import DiceClient


@dataclass(frozen=True, slots=True)
class Opened:
    """The dice service's answer to opening a game: its server seed commitment, and the
    reveal deadline as it recorded it (a retried open keeps the first one)."""

    commitment: str
    reveal_deadline_unix_ms: int


class ChanceSource(Protocol):
    """Where randomness comes from: the dice service (or, in pure tests, a local rng)."""

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened: ...
    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None: ...
    async def resolve(
        self, game_id: str, request_id: str, chance: ChanceRequest
    ) -> ChanceResolved: ...
    async def reveal(self, game_id: str) -> None: ...


class DiceServiceChance:
    """The real thing: every outcome is drawn and recorded by the dice service."""

    def __init__(self, client: DiceClient) -> None:
        self.client = client

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened:
        opened = await self.client.open_game(game_id, seed_commitments, reveal_deadline_unix_ms)
        return Opened(opened.commitment, opened.reveal_deadline_unix_ms)

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        await self.client.fix_seeds(game_id, client_seeds, missing_seats)

    async def resolve(self, game_id: str, request_id: str, chance: ChanceRequest) -> ChanceResolved:
        return await self.client.resolve(game_id, request_id, chance)

    async def reveal(self, game_id: str) -> None:
        await self.client.reveal(game_id)


class LocalChance:
    """In-process randomness for unit tests of the engine core; not auditable. The same
    request id gets the same answer, as with the dice service."""

    def __init__(self, rng: RandomSource) -> None:
        self.rng = rng
        self.answers: dict[str, ChanceResolved] = {}
        self.revealed: set[str] = set()
        self.client_seeds: dict[str, tuple[str, ...]] = {}

    async def open_game(
        self, game_id: str, seed_commitments: Sequence[str], reveal_deadline_unix_ms: int
    ) -> Opened:
        return Opened(
            hashlib.sha256(f"local:{game_id}".encode()).hexdigest(), reveal_deadline_unix_ms
        )

    async def fix_seeds(
        self, game_id: str, client_seeds: Sequence[str], missing_seats: Sequence[int]
    ) -> None:
        self.client_seeds[game_id] = tuple(client_seeds)

    async def resolve(self, game_id: str, request_id: str, chance: ChanceRequest) -> ChanceResolved:
        if request_id not in self.answers:
            self.answers[request_id] = resolve_locally(chance, self.rng)
        return self.answers[request_id]

    async def reveal(self, game_id: str) -> None:
        self.revealed.add(game_id)
