"""The dice service's own settings, on top of the platform's (`BOULEVARD_…`).

The seed key encrypts unrevealed server seeds at rest. In production it comes from the
environment (`BOULEVARD_DICE_SEED_KEY`, 32 bytes as 64 hex digits or base64, from a secret
store); without it the service keeps a generated key in `<data_dir>/dice-seed.key` (mode
0600), which is what `make run` on one machine wants and nothing more.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from functools import cache
from pathlib import Path

import structlog
from pydantic import Field, SecretStr, field_validator

from boulevard.accounting.treehead import TreeHeadSigner
from boulevard.platform.settings import Settings

log = structlog.get_logger(__name__)

KEY_BYTES = 32


class DiceSettings(Settings):
    dice_seed_key: SecretStr | None = None
    dice_seed_key_file: Path | None = None  # default: <data_dir>/dice-seed.key
    dice_seeds_bucket: str = "dice_seeds"
    dice_rpc_prefix: str = "dice.rpc"
    dice_rpc_queue: str = "dice"
    dice_cache_games: int = Field(default=10_000, ge=1)
    # Store each outcome-log leaf and its signed head as two messages, as releases before
    # the one-record form (`DiceSignedLeaf`) did: set it (BOULEVARD_DICE_HEADS_APART=true)
    # while dice replicas of such a release still serve the same NATS, since they cannot read
    # the one-record form (docs/operations.md, "Upgrading"). Both forms are always read.
    dice_heads_apart: bool = False
    # Hex of the 32-byte Ed25519 seed that signs the outcome logs' tree heads. Empty: read
    # (or on first start create) `dice_signing_key_file`, by default
    # `<data_dir>/dice/signing-key` — made once per data dir, like the ledger's.
    dice_signing_key: SecretStr = SecretStr("")
    dice_signing_key_file: Path | None = None

    @field_validator("dice_signing_key")
    @classmethod
    def _hex_signing_seed(cls, value: SecretStr) -> SecretStr:
        raw = value.get_secret_value().strip()
        if raw and (len(raw) != 64 or any(c not in "0123456789abcdefABCDEF" for c in raw)):
            raise ValueError("BOULEVARD_DICE_SIGNING_KEY must be 64 hex digits (32 bytes)")
        return SecretStr(raw)

    def signer(self) -> TreeHeadSigner:
        """The tree-head signer: the key from settings, else the key file (created once)."""
        raw = self.dice_signing_key.get_secret_value()
        if raw:
            return TreeHeadSigner(bytes.fromhex(raw))
        path = self.dice_signing_key_file or self.data_dir / "dice" / "signing-key"
        return TreeHeadSigner(load_or_create_key_file(path))

    @field_validator("dice_seed_key")
    @classmethod
    def _key_is_32_bytes(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            decode_key(value.get_secret_value())
        return value

    def seed_key(self) -> bytes:
        """The AES-256-GCM key for server seeds at rest."""
        if self.dice_seed_key is not None:
            return decode_key(self.dice_seed_key.get_secret_value())
        path = self.dice_seed_key_file or self.data_dir / "dice-seed.key"
        return load_or_create_key_file(path)


def decode_key(text: str) -> bytes:
    """32 bytes from 64 hex digits or from base64; ValueError otherwise."""
    text = text.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the dice seed key must be 32 bytes as hex or base64") from None
    if len(key) != KEY_BYTES:
        raise ValueError(f"the dice seed key must be {KEY_BYTES} bytes, got {len(key)}")
    return key


def load_or_create_key_file(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(KEY_BYTES) + "\n")
            log.warning(
                "generated a dice seed key file; set BOULEVARD_DICE_SEED_KEY in production",
                path=str(path),
            )
    return decode_key(path.read_text())


@cache
def get_dice_settings() -> DiceSettings:
    return DiceSettings()
