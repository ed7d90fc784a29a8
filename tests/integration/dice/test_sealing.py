"""Seeds at rest (no NATS needed): AES-GCM sealing bound to the game, and the key setting."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.dice.sealing import SealError, SeedSealer
from services.dice.settings import DiceSettings, decode_key

KEY = bytes(range(32))
SEED = bytes.fromhex("ab" * 32)


def test_a_sealed_seed_opens_only_for_its_game_and_key() -> None:
    sealer = SeedSealer(KEY)
    sealed = sealer.seal("g-1", SEED)
    assert SEED not in sealed and SEED.hex().encode() not in sealed
    assert sealer.open("g-1", sealed) == SEED
    assert sealer.seal("g-1", SEED) != sealed  # a fresh nonce every time
    with pytest.raises(SealError, match="does not authenticate"):
        sealer.open("g-2", sealed)  # moved to another game
    with pytest.raises(SealError, match="another key"):
        SeedSealer(bytes(32)).open("g-1", sealed)
    flipped = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(SealError, match="does not authenticate"):
        sealer.open("g-1", flipped)
    with pytest.raises(SealError, match="not a sealed seed"):
        sealer.open("g-1", SEED)


def test_the_key_comes_as_hex_or_base64_and_bad_keys_fail_fast(tmp_path: Path) -> None:
    assert decode_key(KEY.hex()) == KEY
    assert decode_key(base64.b64encode(KEY).decode()) == KEY
    for bad in ("", "abcd", "zz" * 32, base64.b64encode(bytes(16)).decode()):
        with pytest.raises(ValueError):
            decode_key(bad)
    with pytest.raises(ValidationError):
        DiceSettings(dice_seed_key="00" * 16, data_dir=tmp_path)
    assert DiceSettings(dice_seed_key=KEY.hex(), data_dir=tmp_path).seed_key() == KEY


def test_without_a_key_setting_a_private_key_file_is_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOULEVARD_DICE_SEED_KEY", raising=False)
    monkeypatch.delenv("BOULEVARD_DICE_SEED_KEY_FILE", raising=False)
    settings = DiceSettings(data_dir=tmp_path)
    key = settings.seed_key()
    path = tmp_path / "dice-seed.key"
    assert len(key) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert DiceSettings(data_dir=tmp_path).seed_key() == key  # the same key after a restart
