"""`buf lint` and `buf breaking` over protos/, against the last release's protos (make lint).

The last release is the last entry of libs/boulevard/games/releases.json; its protos are
exported from git (`git archive <commit> protos`) into a temporary folder, so the check
needs neither a tag nor a work tree of that commit — a fresh clone with its history is
enough, and a worktree (whose .git is a file) works the same. A clone without the release
commit (a shallow one) fails, naming the commit: a skipped check would pass a break.

    python tools/buf_check.py [--protos DIR]   # DIR: the protos to check (default protos/)

Exit status 0 when both pass; buf's findings are printed as it prints them.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUF = ROOT / "tools" / "buf" / "node_modules" / ".bin" / "buf"
MANIFEST = ROOT / "libs" / "boulevard" / "games" / "releases.json"


def last_release_commit() -> str:
    releases = json.loads(MANIFEST.read_text())["releases"]
    commit: str = releases[-1]["commit"]
    return commit


def export_protos(commit: str, into: Path) -> None:
    """protos/ of `commit` into `into`/protos, with today's buf.yaml beside it (the old
    commit may predate it; the rules of the check are today's)."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "protos"],
            check=True,
            capture_output=True,
        ).stdout
    except subprocess.CalledProcessError as err:
        raise SystemExit(
            f"cannot export protos/ of release commit {commit} ({err.stderr.decode().strip()});"
            " a shallow clone? fetch the history (git fetch --unshallow)"
        ) from None
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    shutil.copy(ROOT / "buf.yaml", into / "buf.yaml")


def check(protos: Path, commit: str) -> int:
    """Lint `protos` and check it against `commit`'s protos; 0 when both pass."""
    if not BUF.exists():
        raise SystemExit(f"{BUF} is missing: run `npm ci --prefix tools/buf` (make lint does)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        current, against = work / "current", work / "against"
        shutil.copytree(protos, current / "protos")
        shutil.copy(ROOT / "buf.yaml", current / "buf.yaml")
        export_protos(commit, against)
        lint = subprocess.run([str(BUF), "lint"], cwd=current)
        breaking = subprocess.run([str(BUF), "breaking", "--against", str(against)], cwd=current)
    if lint.returncode == 0 and breaking.returncode == 0:
        print(f"buf: protos lint clean and wire/JSON compatible with release commit {commit[:12]}")
        return 0
    if breaking.returncode != 0:
        print(
            f"buf breaking: this change breaks clients of the release built from {commit[:12]};"
            " make the change additive, or put it in a new package version (boulevard.v2)",
            file=sys.stderr,
        )
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protos", type=Path, default=ROOT / "protos")
    parser.add_argument("--against", default="", help="a commit (default: the last release)")
    args = parser.parse_args()
    return check(args.protos, args.against or last_release_commit())


if __name__ == "__main__":
    raise SystemExit(main())
