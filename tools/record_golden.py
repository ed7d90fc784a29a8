"""Record a golden history: a finished game played by bots on the in-memory engine of a
checkout (today's tree, or a git worktree of a release commit), as committed fixtures in
tests/golden/<game>/rules-<N>.log.gz (one base64 envelope per line, gzip).

    git worktree add --detach /tmp/rel1 <release commit>
    python tools/record_golden.py --checkout /tmp/rel1 --rules 1 long_shot 3 7

The game is played by the checkout's own code (its engine, rules and bots, through
`tests/unit/audit/test_game_log.honest_game`), so a release's golden history is what that
release wrote — its schema, its GameCreated — not what today's code would write.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"

PLAY = """
import asyncio, base64, sys
sys.path[:0] = [".", "libs"]
from tests.unit.audit.test_game_log import honest_game
log, _, _ = asyncio.run(honest_game(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
with open(sys.argv[4], "w") as out:  # not stdout: the engine logs there
    out.writelines(base64.b64encode(data).decode() + "\\n" for data in log)
"""


def record(checkout: Path, game: str, players: int, seed: int) -> list[str]:
    """The game's envelopes (base64), played in `checkout` by its own code."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "log"
        subprocess.run(
            [sys.executable, "-c", PLAY, game, str(players), str(seed), str(out)],
            cwd=checkout,
            check=True,
            capture_output=True,
        )
        return out.read_text().split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--rules", type=int, required=True, help="the rules version it plays")
    parser.add_argument("game")
    parser.add_argument("players", type=int)
    parser.add_argument("seed", type=int)
    args = parser.parse_args()
    lines = record(args.checkout, args.game, args.players, args.seed)
    path = GOLDEN / args.game / f"rules-{args.rules}.log.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same game gives the same bytes.
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    print(f"{path.relative_to(ROOT)}: {len(lines)} envelopes, {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
