"""The provably-fair derivation: seeds and commitment, the byte stream, unbiased draws,
dice and shuffles.

This module is the reference implementation of `docs/fairness.md`; that page is the
specification and an auditor should be able to rewrite this file from it alone. Pure: no
I/O, no clock, no global random. The server seed is chosen by the dice service (from
`secrets`) and handed in here.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

SCHEME_VERSION = "boulevard-fairness-v1"
"""Named in every commitment the service publishes, so a later change of scheme is explicit."""

SEED_BYTES = 32
"""A server seed is 256 bits; it travels as 64 lowercase hex digits."""

DRAW_BYTES = 4
"""Every draw consumes 4 bytes of the stream (one big-endian unsigned 32-bit integer)."""

RAW_BITS = 8 * DRAW_BYTES
BLOCK_BYTES = 32  # one HMAC-SHA256 output

MAX_SIDES = 1 << RAW_BITS
"""The largest `n` a draw supports: a die may have at most 2**32 sides."""

MAX_ROLL_COUNT = 10_000
MAX_SHUFFLE_COUNT = 1_000_000
MAX_GAME_ID_BYTES = 256
MAX_NONCE = (1 << 64) - 1

# The kinds of outcome, equal to the values of `boulevard.games.base.ChanceKind` (a StrEnum,
# so its members compare and hash equal to these strings). Kept as strings here so that the
# fairness package depends on nothing else.
ROLL = "roll"
SHUFFLE = "shuffle"
KINDS = (ROLL, SHUFFLE)


class FairnessError(Exception):
    """Root of the fairness package's errors. `code` is stable for tests and status mapping."""

    code = "fairness_error"


class InvalidInput(FairnessError):
    """A seed, game id, nonce or request that the scheme does not define."""

    code = "invalid_input"


def parse_server_seed(seed_hex: str) -> bytes:
    """The 32 bytes of a server seed given as 64 hex digits (either case)."""
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        raise InvalidInput("server seed must be hex") from None
    if len(seed) != SEED_BYTES:
        raise InvalidInput(f"server seed must be {SEED_BYTES} bytes ({2 * SEED_BYTES} hex digits)")
    return seed


def commitment(server_seed: bytes) -> str:
    """The public commitment to a server seed: SHA-256 of its 32 raw bytes, lowercase hex."""
    _check_seed(server_seed)
    return hashlib.sha256(server_seed).hexdigest()


def seed_matches_commitment(server_seed_hex: str, commitment_hex: str) -> bool:
    """Whether a revealed seed (hex) is the one committed to (hex, compared case-insensitively
    and in constant time)."""
    try:
        seed = parse_server_seed(server_seed_hex)
    except InvalidInput:
        return False
    return hmac.compare_digest(commitment(seed), commitment_hex.strip().lower())


MAX_CLIENT_SEED_BYTES = 256
"""A client seed is at most 256 bytes of UTF-8."""


def client_seed_commitment(client_seed: str) -> str:
    """A seat's commitment to its client seed, fixed before the server seed is drawn:
    SHA-256 of the seed's UTF-8 bytes, lowercase hex (64 digits)."""
    return hashlib.sha256(client_seed.encode("utf-8")).hexdigest()


def is_commitment(text: str) -> bool:
    """Whether `text` is 64 lowercase hex digits (the form commitments travel in)."""
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def combine_client_seeds(client_seeds: Iterable[str]) -> bytes:
    """The combined client seed: SHA-256 over the players' seeds (UTF-8), sorted bytewise,
    each preceded by its length as a 4-byte big-endian integer. Sorting makes it independent
    of seat order; the length prefix makes ("ab", "c") differ from ("a", "bc"). Duplicates
    and empty seeds count. 32 bytes."""
    encoded = sorted(seed.encode("utf-8") for seed in client_seeds)
    digest = hashlib.sha256()
    for seed in encoded:
        digest.update(struct.pack(">I", len(seed)))
        digest.update(seed)
    return digest.digest()


def block_message(combined_client_seed: bytes, game_id: str, nonce: int, block: int) -> bytes:
    """The HMAC message of block `block` of outcome `nonce`: combined client seed (32 bytes)
    ‖ len(game_id) (4 bytes BE) ‖ game_id (UTF-8) ‖ nonce (8 bytes BE) ‖ block (4 bytes BE)."""
    game = _game_id_bytes(game_id)
    return _message_prefix(combined_client_seed, game, nonce) + struct.pack(">I", block)


def block_bytes(
    server_seed: bytes, combined_client_seed: bytes, game_id: str, nonce: int, block: int
) -> bytes:
    """Block `block` of outcome `nonce`: HMAC-SHA256(key=server seed, message above)."""
    _check_seed(server_seed)
    return hmac.digest(
        server_seed, block_message(combined_client_seed, game_id, nonce, block), "sha256"
    )


def uniform_from_raw(raw: int, n: int, raw_bits: int = RAW_BITS) -> int | None:
    """Map one raw draw (an integer in [0, 2**raw_bits)) to [0, n) without bias, or None
    when the draw is rejected: with `limit = 2**raw_bits - (2**raw_bits mod n)`, a raw value
    below `limit` gives `raw mod n` (each result is reached by exactly `limit / n` raw
    values) and one at or above `limit` is thrown away. The service uses raw_bits = 32; the
    parameter exists so the tests can enumerate a whole cycle of raw values."""
    space = 1 << raw_bits
    if not 1 <= n <= space:
        raise InvalidInput(f"n must be in 1..{space}, got {n}")
    if not 0 <= raw < space:
        raise InvalidInput(f"raw value out of range: {raw}")
    limit = space - space % n
    if raw >= limit:
        return None
    return raw % n


class OutcomeStream:
    """The byte stream of one outcome (one nonce): block 0 ‖ block 1 ‖ …, read 4 bytes per
    draw. Blocks are computed lazily; a roll of a few dice uses one block."""

    __slots__ = ("_blocks", "_buffer", "_pos", "raw_draws")

    def __init__(
        self, server_seed: bytes, combined_client_seed: bytes, game_id: str, nonce: int
    ) -> None:
        _check_seed(server_seed)
        self._blocks = outcome_blocks(server_seed, combined_client_seed, game_id, nonce)
        self._buffer = b""
        self._pos = 0
        self.raw_draws = 0  # how many 4-byte values were read (accepted or rejected)

    def next_raw(self) -> int:
        """The next 4 bytes of the stream as a big-endian unsigned integer."""
        if self._pos + DRAW_BYTES > len(self._buffer):
            # 32 is a multiple of 4, so a draw never straddles two blocks.
            self._buffer = next(self._blocks)
            self._pos = 0
        (value,) = struct.unpack_from(">I", self._buffer, self._pos)
        self._pos += DRAW_BYTES
        self.raw_draws += 1
        return int(value)

    def uniform(self, n: int) -> int:
        """An unbiased integer in [0, n): draw until a raw value is accepted."""
        if not 1 <= n <= MAX_SIDES:
            raise InvalidInput(f"n must be in 1..{MAX_SIDES}, got {n}")
        limit = MAX_SIDES - MAX_SIDES % n
        while True:
            raw = self.next_raw()
            if raw < limit:
                return raw % n


@dataclass(frozen=True, slots=True)
class GameSeeds:
    """Everything that fixes a game's outcomes: the server seed, the combined client seed and
    the game id. Outcome `nonce` of the game is `derive(nonce, kind, count, sides)`."""

    server_seed: bytes
    combined_client_seed: bytes
    game_id: str

    @classmethod
    def of(cls, server_seed: bytes, client_seeds: Iterable[str], game_id: str) -> GameSeeds:
        _check_seed(server_seed)
        _game_id_bytes(game_id)
        return cls(server_seed, combine_client_seeds(client_seeds), game_id)

    @property
    def commitment(self) -> str:
        return commitment(self.server_seed)

    def stream(self, nonce: int) -> OutcomeStream:
        _check_nonce(nonce)
        return OutcomeStream(self.server_seed, self.combined_client_seed, self.game_id, nonce)

    def roll(self, nonce: int, count: int, sides: int) -> tuple[int, ...]:
        """`count` dice of `sides` sides, each in 1..sides, from outcome `nonce`'s stream."""
        check_request(ROLL, count, sides)
        stream = self.stream(nonce)
        return tuple(1 + stream.uniform(sides) for _ in range(count))

    def shuffle(self, nonce: int, count: int) -> tuple[int, ...]:
        """A permutation of range(count) by Fisher–Yates from outcome `nonce`'s stream:
        for i = count-1 down to 1, swap items i and uniform(i + 1)."""
        check_request(SHUFFLE, count, 0)
        stream = self.stream(nonce)
        items = list(range(count))
        for i in range(count - 1, 0, -1):
            j = stream.uniform(i + 1)
            items[i], items[j] = items[j], items[i]
        return tuple(items)

    def derive(self, nonce: int, kind: str, count: int, sides: int) -> tuple[int, ...]:
        """Outcome `nonce` of the given kind: a roll, or a shuffle (`sides` is ignored)."""
        if kind == ROLL:
            return self.roll(nonce, count, sides)
        if kind == SHUFFLE:
            return self.shuffle(nonce, count)
        raise InvalidInput(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def check_request(kind: str, count: int, sides: int) -> None:
    """Raise InvalidInput unless (kind, count, sides) is an outcome the scheme defines."""
    if kind == ROLL:
        if not 1 <= count <= MAX_ROLL_COUNT:
            raise InvalidInput(f"a roll needs 1..{MAX_ROLL_COUNT} dice, got {count}")
        if not 1 <= sides <= MAX_SIDES:
            raise InvalidInput(f"a die needs 1..{MAX_SIDES} sides, got {sides}")
    elif kind == SHUFFLE:
        if not 0 <= count <= MAX_SHUFFLE_COUNT:
            raise InvalidInput(f"a shuffle needs 0..{MAX_SHUFFLE_COUNT} items, got {count}")
    else:
        raise InvalidInput(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def outcome_blocks(
    server_seed: bytes, combined_client_seed: bytes, game_id: str, nonce: int
) -> Iterator[bytes]:
    """The blocks of outcome `nonce`'s stream in order: `block_bytes(…, nonce, 0)`,
    `block_bytes(…, nonce, 1)`, … (the HMAC state over the shared prefix is reused)."""
    _check_seed(server_seed)
    prefix = _message_prefix(combined_client_seed, _game_id_bytes(game_id), nonce)
    mac = hmac.new(server_seed, prefix, hashlib.sha256)
    block = 0
    while True:
        if block > 0xFFFFFFFF:  # 128 GiB of one outcome; unreachable within the limits above
            raise InvalidInput("outcome stream exhausted")
        per_block = mac.copy()
        per_block.update(struct.pack(">I", block))
        yield per_block.digest()
        block += 1


def _message_prefix(combined_client_seed: bytes, game_id: bytes, nonce: int) -> bytes:
    if len(combined_client_seed) != 32:
        raise InvalidInput("the combined client seed is 32 bytes")
    _check_nonce(nonce)
    return (
        combined_client_seed + struct.pack(">I", len(game_id)) + game_id + struct.pack(">Q", nonce)
    )


def _game_id_bytes(game_id: str) -> bytes:
    encoded = game_id.encode("utf-8")
    if not 1 <= len(encoded) <= MAX_GAME_ID_BYTES:
        raise InvalidInput(f"game id must be 1..{MAX_GAME_ID_BYTES} bytes of UTF-8")
    return encoded


def _check_seed(server_seed: bytes) -> None:
    if len(server_seed) != SEED_BYTES:
        raise InvalidInput(f"server seed must be {SEED_BYTES} bytes")


def _check_nonce(nonce: int) -> None:
    if not 0 <= nonce <= MAX_NONCE:
        raise InvalidInput(f"nonce must be in 0..{MAX_NONCE}, got {nonce}")
