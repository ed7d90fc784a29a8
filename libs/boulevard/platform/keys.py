"""Ed25519 keys kept per data dir: the engine's receipt key, the operator's bot key."""

from __future__ import annotations

import os
from pathlib import Path

from boulevard.audit.signing import SigningKey


def load_key(hex_seed: str, path: Path) -> SigningKey:
    """A key from a setting (64 hex digits), else from `path`, made there once (mode 0600)."""
    if hex_seed.strip():
        return SigningKey.from_hex(hex_seed)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # O_EXCL: two processes starting at once must not overwrite each other's key.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(os.urandom(32).hex() + "\n")
    try:
        return SigningKey.from_hex(path.read_text())
    except ValueError:
        raise ValueError(f"{path} does not hold 64 hex digits") from None
