"""Rules versions: which rules decide a game, pinned in its `GameCreated` (docs/architecture.md,
"Rules versions").

A game's rules version is `"<number>:<sha256>"`: a number per game, counted from 1, and the
content hash of the game's rules files when that number was recorded (`rules_digest`: every
file of the game's package but its bots and its words, `bots.py`, `render.py`, `describe.py`).
The numbers and hashes live in `releases.json` beside this module, with the releases: the
commit each release was built from and the rules version of each game in it. The empty
string, the `rules_version` of every game created before versions were pinned, means
version 1 (the rules of release 1).

Every recorded version of a game is hosted by the code here: by the game's `GAME`, or, for a
version whose decisions differ from today's, by the definition the game's package lists in
`EARLIER_RULES`. A version this code does not have is refused (`UnknownRulesVersion`), never
played or audited with other rules. Tests hold the rest: today's files hash to the newest
recorded version of each game, each release's files (read from git) hash to the versions it
names, and a finished game of every released version replays and audits (tests/golden/).

Pure: reads only the package's own files (importlib.resources), no I/O beyond that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module, resources
from typing import Any

from boulevard.games import REGISTRY
from boulevard.games.base import GameDefinition

# Files of a game's package that are not its rules: how bots play and how events read in
# words change nothing a game decides, so they may change without a new rules version.
NOT_RULES = frozenset({"bots.py", "render.py", "describe.py"})
_DOMAIN = b"boulevard.rules.v1\x00"


class UnknownRulesVersion(LookupError):
    """A game names a rules version this code does not host. Nothing may replay, decide or
    audit it with other rules: the message names the version and the ones hosted here."""


@dataclass(frozen=True, slots=True)
class RulesVersion:
    """One recorded version of one game's rules, and the definition that decides it."""

    game: str
    number: int
    sha256: str
    definition: GameDefinition[Any, Any, Any, Any]

    @property
    def pin(self) -> str:
        """What `GameCreated.rules_version` records: `"<number>:<sha256>"`."""
        return f"{self.number}:{self.sha256}"


@dataclass(frozen=True, slots=True)
class Release:
    """A release of the platform: its name, the commit it was built from, and the rules
    version of each game in it (name -> number)."""

    name: str
    commit: str
    rules: Mapping[str, int]


def digest_files(files: Iterable[tuple[str, bytes]]) -> str:
    """The content hash of a set of rules files, given as (name in the package, bytes):
    SHA-256 over the domain, then each file's name and SHA-256 in name order. Anyone can
    recompute it from a checkout: `rules_digest_of_tree` below, or the same in any language."""
    h = hashlib.sha256(_DOMAIN)
    for name, data in sorted(files):
        h.update(name.encode() + b"\x00" + hashlib.sha256(data).digest())
    return h.hexdigest()


def is_rules_file(name: str) -> bool:
    """Whether a file of a game's package (name relative to it) counts in its rules hash."""
    return name.endswith((".py", ".json")) and "/" not in name and name not in NOT_RULES


def rules_digest(game: str) -> str:
    """The content hash of the rules files of `game` as installed here."""
    root = resources.files(f"boulevard.games.{game}")
    return digest_files(
        (entry.name, entry.read_bytes())
        for entry in root.iterdir()
        if entry.is_file() and is_rules_file(entry.name)
    )


@cache
def _manifest() -> dict[str, Any]:
    raw = resources.files("boulevard.games").joinpath("releases.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(raw)
    return data


def recorded_versions(game: str) -> dict[int, str]:
    """The recorded rules versions of `game` (number -> sha256) from releases.json."""
    return {int(v["version"]): str(v["sha256"]) for v in _manifest()["rules"].get(game, [])}


def releases() -> tuple[Release, ...]:
    """Every release, oldest first, as releases.json lists them."""
    return tuple(
        Release(str(r["name"]), str(r["commit"]), {g: int(n) for g, n in r["rules"].items()})
        for r in _manifest()["releases"]
    )


def _earlier_rules(game: str) -> Mapping[int, GameDefinition[Any, Any, Any, Any]]:
    earlier: Mapping[int, GameDefinition[Any, Any, Any, Any]] = getattr(
        import_module(f"boulevard.games.{game}"), "EARLIER_RULES", {}
    )
    return earlier


@cache
def hosted(game: str) -> tuple[RulesVersion, ...]:
    """Every rules version of `game` this code decides, oldest first."""
    if game not in REGISTRY:
        raise UnknownRulesVersion(f"unknown game {game!r}; known: {', '.join(sorted(REGISTRY))}")
    earlier = _earlier_rules(game)
    return tuple(
        RulesVersion(game, number, sha, earlier.get(number, REGISTRY[game]))
        for number, sha in sorted(recorded_versions(game).items())
    )


def newest(game: str) -> RulesVersion:
    """The version new games of `game` are created with: the newest recorded one."""
    versions = hosted(game)
    if not versions:
        raise UnknownRulesVersion(f"{game} has no recorded rules version (releases.json)")
    return versions[-1]


def for_release(game: str, release: str = "") -> RulesVersion:
    """The version new games of `game` are created with when new games must keep a
    release's rules ("": the newest recorded; else the version release `release` names).
    During a rolling upgrade, the new engines create games with the old release's rules
    until no engine of it runs (docs/operations.md, "Upgrading")."""
    if not release:
        return newest(game)
    for r in releases():
        if r.name == release:
            number = r.rules.get(game)
            if number is None:
                raise UnknownRulesVersion(f"release {release} has no rules for {game}")
            return rules_for(game, f"{number}:{recorded_versions(game)[number]}")
    known = ", ".join(r.name for r in releases())
    raise UnknownRulesVersion(f"no release {release!r} in releases.json (releases: {known})")


def parse_pin(pin: str) -> tuple[int, str]:
    """`"<number>:<sha256>"` -> (number, sha256); `""` (a game from before pinning) -> (1, "")."""
    if pin == "":
        return 1, ""
    number, sep, sha = pin.partition(":")
    if not sep or not number.isdigit() or len(sha) != 64 or sha.strip("0123456789abcdef"):
        raise UnknownRulesVersion(f"rules version {pin!r} is not '<number>:<sha256 hex>'")
    return int(number), sha


def rules_for(game: str, pin: str) -> RulesVersion:
    """The rules that decide a game of `game` created with `rules_version` `pin`, or
    UnknownRulesVersion naming the version when this code does not host exactly it
    (another number, or the same number with another hash)."""
    number, sha = parse_pin(pin)
    versions = {v.number: v for v in hosted(game)}
    found = versions.get(number)
    named = f"{game} rules version {pin or '1 (the game predates pinning)'}"
    have = ", ".join(v.pin for v in versions.values()) or "none"
    if found is None:
        raise UnknownRulesVersion(f"{named} is not hosted by this build (it has {have})")
    if sha and sha != found.sha256:
        raise UnknownRulesVersion(
            f"{named}: this build's version {number} has hash {found.sha256}, not {sha}"
        )
    return found
