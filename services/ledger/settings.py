"""The ledger's own settings, beside the platform's (`BOULEVARD_LEDGER_…`)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from pydantic import Field, SecretStr, field_validator

from boulevard.accounting import TreeHeadSigner
from boulevard.platform.settings import Settings


class LedgerSettings(Settings):
    # Hex of the 32-byte Ed25519 seed that signs tree heads. Empty: read (or on first start
    # create) `ledger_signing_key_file`, by default `<data_dir>/ledger/signing-key`.
    ledger_signing_key: SecretStr = SecretStr("")
    ledger_signing_key_file: Path | None = None
    ledger_consumer: str = Field(default="ledger", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    ledger_fetch_batch: int = Field(default=256, ge=1, le=999)  # ≤ a JetStream atomic batch
    # A tree head is signed once this many entries are unsigned, or after this long.
    ledger_sign_every: int = Field(default=1000, ge=1)
    ledger_sign_interval_seconds: float = Field(default=1.0, gt=0)
    ledger_ack_wait_seconds: float = Field(default=30.0, gt=0)
    ledger_publish_timeout_seconds: float = Field(default=10.0, gt=0)
    # The state is checkpointed every this many entries (and on a clean stop) into this KV
    # bucket, so a start reads only what came after; 0: no checkpoints, every start reads
    # all of LEDGER.
    ledger_checkpoint_every: int = Field(default=10_000, ge=0)
    ledger_checkpoint_bucket: str = Field(
        default="ledger_checkpoint", pattern=r"^[A-Za-z0-9_-]{1,64}$"
    )

    @field_validator("ledger_signing_key")
    @classmethod
    def _hex_seed(cls, value: SecretStr) -> SecretStr:
        raw = value.get_secret_value().strip()
        if raw and (len(raw) != 64 or any(c not in "0123456789abcdefABCDEF" for c in raw)):
            raise ValueError("BOULEVARD_LEDGER_SIGNING_KEY must be 64 hex digits (32 bytes)")
        return SecretStr(raw)

    def key_file(self) -> Path:
        return self.ledger_signing_key_file or self.data_dir / "ledger" / "signing-key"


def load_signer(settings: LedgerSettings) -> TreeHeadSigner:
    """The tree-head signer: the key from settings, else the key file (created once)."""
    raw = settings.ledger_signing_key.get_secret_value()
    if raw:
        return TreeHeadSigner(bytes.fromhex(raw))
    path = settings.key_file()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # O_EXCL: two processes starting at once must not overwrite each other's key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
    text = path.read_text().strip()
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise ValueError(f"{path} does not hold 64 hex digits") from None
    return TreeHeadSigner(seed)


@cache
def get_ledger_settings() -> LedgerSettings:
    return LedgerSettings()
