#!/usr/bin/env bash
# Feed the fairness derivation's raw bytes to Debian's dieharder (apt-get install dieharder).
#
#   tools/dieharder.sh                 # the whole battery: dieharder -a (hours)
#   tools/dieharder.sh -d 0 -d 1       # chosen tests only (any dieharder options)
#
# The stream is exactly what dice and shuffles consume: for one game (a server seed, client
# seeds, a game id), outcome nonce 0, 1, 2, … in turn, the first BLOCKS HMAC-SHA256 blocks of
# each (block counters 0..BLOCKS-1), concatenated. Not part of `make test`: it runs for hours.
#
# Environment: SEED_HEX (64 hex digits; default: SHA-256 of "boulevard dieharder"), BLOCKS
# (default 4), PYTHON (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
command -v dieharder >/dev/null || { echo "dieharder not found: apt-get install dieharder" >&2; exit 2; }
if [ $# -eq 0 ]; then set -- -a; fi

"$PYTHON" - <<'PY' | dieharder -g 200 "$@"
import hashlib, os, sys
from itertools import count

from boulevard.fairness import combine_client_seeds, outcome_blocks

seed = bytes.fromhex(os.environ.get("SEED_HEX") or hashlib.sha256(b"boulevard dieharder").hexdigest())
blocks = int(os.environ.get("BLOCKS", "4"))
combined = combine_client_seeds(["alice", "bob", "carol"])
out = sys.stdout.buffer
print(f"# stream: seed sha256={hashlib.sha256(seed).hexdigest()} blocks/nonce={blocks}", file=sys.stderr)
try:
    chunk: list[bytes] = []
    for nonce in count():
        stream = outcome_blocks(seed, combined, "dieharder", nonce)
        chunk.extend(next(stream) for _ in range(blocks))
        if len(chunk) >= 2048:
            out.write(b"".join(chunk))
            chunk.clear()
except BrokenPipeError:  # dieharder has read all it wants
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
PY
