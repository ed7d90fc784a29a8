"""Rules versions (boulevard.games.versions): every game's files are its newest recorded
version, each release's files (read from git) are the versions it names, and a version this
code does not host is refused by name — never decided with other rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from boulevard.games import REGISTRY
from boulevard.games.versions import (
    UnknownRulesVersion,
    digest_files,
    hosted,
    newest,
    parse_pin,
    recorded_versions,
    releases,
    rules_digest,
    rules_for,
)

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools"))

import rules_versions  # noqa: E402


@pytest.mark.parametrize("game", sorted(REGISTRY))
def test_todays_files_are_the_newest_recorded_version(game: str) -> None:
    # A change to a game's rules files without recording a version fails here (and in make
    # lint), naming the command that records one.
    assert rules_digest(game) == newest(game).sha256, (
        f"{game}'s rules files changed: `python tools/rules_versions.py record {game}`"
    )


def test_every_release_names_a_commit_whose_files_are_its_versions() -> None:
    if shutil.which("git") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("git is missing in CI")
        pytest.skip("git is not installed")
    for release in releases():
        for game, number in release.rules.items():
            try:
                at_commit = rules_versions.digest_at(release.commit, game)
            except subprocess.CalledProcessError as err:
                pytest.fail(f"release {release.name}: commit {release.commit} is not here: {err}")
            assert at_commit == recorded_versions(game)[number], (release.name, game)


def test_every_game_is_in_the_last_release_and_hosts_every_version() -> None:
    last = releases()[-1]
    assert set(last.rules) == set(REGISTRY)
    for game in REGISTRY:
        assert [v.number for v in hosted(game)] == sorted(recorded_versions(game))


def test_the_empty_version_is_version_1() -> None:
    for game in REGISTRY:
        assert rules_for(game, "").number == 1
    assert parse_pin("") == (1, "")


def test_a_version_not_hosted_is_refused_by_name() -> None:
    v1 = rules_for("las_vegas", "")
    with pytest.raises(
        UnknownRulesVersion, match=r"las_vegas rules version 99:0{64} is not hosted"
    ):
        rules_for("las_vegas", "99:" + "0" * 64)
    with pytest.raises(UnknownRulesVersion, match=f"has hash {v1.sha256}, not {'a' * 64}"):
        rules_for("las_vegas", "1:" + "a" * 64)
    for bad in ("1", "x:" + "0" * 64, "1:ABC", "1:" + "g" * 64):
        with pytest.raises(UnknownRulesVersion, match="is not '<number>:<sha256 hex>'"):
            rules_for("las_vegas", bad)
    with pytest.raises(UnknownRulesVersion, match="unknown game"):
        rules_for("chess", "")


def test_the_digest_covers_names_and_bytes_and_not_the_order_given() -> None:
    files = [("rules.py", b"a"), ("types.py", b"b")]
    assert digest_files(files) == digest_files(reversed(files))
    assert digest_files(files) != digest_files([("rules.py", b"b"), ("types.py", b"a")])
    assert digest_files(files) != digest_files([("rules2.py", b"a"), ("types.py", b"b")])
