"""`make lint` runs `buf lint` and `buf breaking` against the last release's protos
(tools/buf_check.py): today's protos pass, and a doctored copy that breaks the wire or JSON
contract fails — so a breaking change cannot reach main by accident."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

import buf_check  # noqa: E402


@pytest.fixture
def protos(tmp_path: Path) -> Path:
    """A copy of today's protos/ to doctor."""
    if not buf_check.BUF.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{buf_check.BUF} is missing in CI (make lint installs it with npm ci)")
        pytest.skip("the buf CLI is not installed: npm ci --prefix tools/buf (make lint does)")
    copy = tmp_path / "protos"
    shutil.copytree(ROOT / "protos", copy)
    return copy


def doctor(protos: Path, name: str, old: str, new: str) -> None:
    path = protos / "boulevard" / "v1" / name
    text = path.read_text()
    assert old in text, f"{old!r} is not in {name} any more: update the test"
    path.write_text(text.replace(old, new, 1))


def test_todays_protos_pass_against_the_last_release(protos: Path) -> None:
    assert buf_check.check(protos, buf_check.last_release_commit()) == 0


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        # A field renumbered: every stored envelope would read as another field.
        ("events.proto", "bytes payload = 9;", "bytes payload = 19;"),
        # A field renamed: the JSON (and the gateway's clients) would lose it.
        ("engine.proto", "string game_id = 1;", "string game_ident = 1;"),
        # A field's type changed.
        ("events.proto", "int64 amount = 3;", "string amount = 3;"),
    ],
)
def test_a_breaking_change_fails(protos: Path, name: str, old: str, new: str) -> None:
    doctor(protos, name, old, new)
    assert buf_check.check(protos, buf_check.last_release_commit()) == 1


def test_an_additive_change_passes(protos: Path) -> None:
    doctor(
        protos,
        "events.proto",
        "  bytes blinding = 12;",
        "  bytes blinding = 12;\n  string added = 99;",
    )
    assert buf_check.check(protos, buf_check.last_release_commit()) == 0


def test_a_lint_finding_fails(protos: Path) -> None:
    # Additive (breaking passes), but not the style buf lint holds every message to.
    doctor(
        protos,
        "events.proto",
        "message StoredEvent {",
        "message stored_event {}\n\nmessage StoredEvent {",
    )
    assert buf_check.check(protos, buf_check.last_release_commit()) == 1
