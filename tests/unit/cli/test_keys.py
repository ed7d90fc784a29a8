"""`boulevard keys history` and what `boulevard up` publishes: the history the engine serves
grows by signed handovers only; a key that changed without one is not added."""

from __future__ import annotations

from pathlib import Path

import pytest

from boulevard.audit.keys import KeyHistory, key_history_path
from boulevard.audit.signing import SigningKey
from boulevard.cli import keys
from boulevard.cli.up import publish_keys

FIRST, SECOND = SigningKey(bytes([31]) * 32), SigningKey(bytes([32]) * 32)


def key_file(data: Path, role: str, key: SigningKey) -> Path:
    path = data / role / "signing-key"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(key.seed.hex())
    return path


def test_the_history_takes_the_data_dirs_keys_and_grows_only_by_signed_handovers(
    tmp_path: Path,
) -> None:
    key_file(tmp_path, "engine", FIRST)
    key_file(tmp_path, "ledger", SECOND)
    out = key_history_path(tmp_path)
    made = keys.publish(tmp_path, out, now_unix_ms=1)
    assert made.keys("engine") == [FIRST.public_hex] and made.keys("ledger") == [SECOND.public_hex]
    assert made.keys("dice") == [] and KeyHistory.loads(out.read_text()) == made
    assert keys.publish(tmp_path, out, now_unix_ms=2) == made  # nothing changed
    key_file(tmp_path, "engine", SECOND)  # rotated, without the old key's signature
    with pytest.raises(ValueError, match="must be signed by the current one"):
        keys.publish(tmp_path, out, now_unix_ms=3)
    assert KeyHistory.loads(out.read_text()) == made  # left as it was
    rotated = keys.publish(tmp_path, out, previous={"engine": FIRST}, now_unix_ms=4)
    assert rotated.keys("engine") == [FIRST.public_hex, SECOND.public_hex]
    assert rotated.problem() is None and rotated.extends(made)


def test_up_publishes_the_keys_given_in_its_environment_and_never_an_unsigned_swap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file(tmp_path, "engine", FIRST)
    publish_keys(tmp_path, {"BOULEVARD_BOT_SIGNING_KEY": SECOND.seed.hex()})
    served = KeyHistory.loads(key_history_path(tmp_path).read_text())
    assert served.keys("bots") == [SECOND.public_hex] and served.keys("engine") == [
        FIRST.public_hex
    ]
    key_file(tmp_path, "engine", SECOND)
    publish_keys(tmp_path, {})
    assert "key history not extended" in capsys.readouterr().out
    assert KeyHistory.loads(key_history_path(tmp_path).read_text()) == served
