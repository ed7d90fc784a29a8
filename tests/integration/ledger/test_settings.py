"""The ledger's own settings: the signing key from the environment or a key file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from boulevard.accounting import TreeHeadSigner
from services.ledger.settings import LedgerSettings, load_signer


def test_the_key_comes_from_settings(tmp_path: Path) -> None:
    s = LedgerSettings(data_dir=tmp_path, ledger_signing_key="ab" * 32)
    assert load_signer(s).public_key == TreeHeadSigner(bytes.fromhex("ab" * 32)).public_key
    assert not (tmp_path / "ledger").exists()


def test_without_a_key_one_is_created_once_and_kept_private(tmp_path: Path) -> None:
    s = LedgerSettings(data_dir=tmp_path)
    first = load_signer(s)
    path = tmp_path / "ledger" / "signing-key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_signer(s).public_key == first.public_key


@pytest.mark.parametrize("bad", ["abc", "zz" * 32, "ab" * 31])
def test_a_malformed_key_fails_fast(bad: str) -> None:
    with pytest.raises(ValidationError):
        LedgerSettings(ledger_signing_key=bad)
