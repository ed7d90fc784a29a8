"""Rules versions from git: the rules hash of each game at any commit, and recording a new one.

    python tools/rules_versions.py check            # today's files against releases.json
    python tools/rules_versions.py at <commit>      # each game's rules hash at a commit
    python tools/rules_versions.py record <game>    # record today's rules of <game> as the
                                                    # next version (after a rules change)

Recording a version does not change how older games are decided: when the change alters
what `decide`/`evolve`/`chance`/`new_game`/`outcome` give, the game's package must also
list the older version's definition in `EARLIER_RULES` (docs/architecture.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "libs"))

from boulevard.games import REGISTRY  # noqa: E402
from boulevard.games.versions import (  # noqa: E402
    digest_files,
    is_rules_file,
    recorded_versions,
    rules_digest,
)

GAMES_DIR = "libs/boulevard/games"
MANIFEST = ROOT / GAMES_DIR / "releases.json"


def git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True).stdout


def digest_at(commit: str, game: str) -> str:
    """The rules hash of `game` in the tree of `commit` (read with git, no checkout)."""
    prefix = f"{GAMES_DIR}/{game}/"
    names = git("ls-tree", "--name-only", commit, prefix).decode().split()
    files = []
    for path in names:
        name = path.removeprefix(prefix)
        if is_rules_file(name):
            files.append((name, git("show", f"{commit}:{path}")))
    if not files:
        raise SystemExit(f"{game} has no rules files at {commit}")
    return digest_files(files)


def check() -> int:
    problems = []
    for game in sorted(REGISTRY):
        recorded = recorded_versions(game)
        newest = max(recorded) if recorded else None
        today = rules_digest(game)
        if newest is None or recorded[newest] != today:
            problems.append(
                f"{game}: its rules files hash to {today}, not to its newest recorded version "
                f"({newest}:{recorded.get(newest or 0, '-')}): run "
                f"`python tools/rules_versions.py record {game}`"
            )
    print("\n".join(problems) or "every game's files are its newest recorded rules version")
    return 1 if problems else 0


def record(game: str) -> int:
    data = json.loads(MANIFEST.read_text())
    versions = data["rules"].setdefault(game, [])
    today = rules_digest(game)
    if versions and versions[-1]["sha256"] == today:
        print(f"{game}: today's rules are already version {versions[-1]['version']}")
        return 0
    number = (versions[-1]["version"] + 1) if versions else 1
    versions.append({"version": number, "sha256": today})
    MANIFEST.write_text(json.dumps(data, indent=2) + "\n")
    print(f"{game}: recorded rules version {number}:{today}")
    return 0


def main(argv: list[str]) -> int:
    match argv:
        case ["check"]:
            return check()
        case ["at", commit]:
            for game in sorted(REGISTRY):
                print(game, digest_at(commit, game))
            return 0
        case ["record", game] if game in REGISTRY:
            return record(game)
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
