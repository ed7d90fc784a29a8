#!/usr/bin/env bash
# Feed the fairness derivation's raw bytes to Debian's dieharder (apt-get install dieharder).
#
#   tools/dieharder.sh                 # the whole battery: dieharder -a
#   tools/dieharder.sh -d 0 -d 1       # chosen tests only (any dieharder options)
#
# The stream is exactly what dice and shuffles consume: for one game (a server seed, client
# seeds, a game id), outcome nonce 0, 1, 2, … in turn, the first BLOCKS HMAC-SHA256 blocks of
# each (block counters 0..BLOCKS-1), concatenated. Not part of `make test`: it runs for hours.
#
# Two generators make the same bytes: GENERATOR=python (boulevard.fairness itself, ≈12 MB/s)
# and GENERATOR=c (the same construction in C over OpenSSL's SHA-256, ≈120 MB/s; the default
# when gcc and the OpenSSL headers are there). The C one is compiled into a temporary folder
# and must reproduce boulevard.fairness's first MiB byte for byte before dieharder starts.
#
# Environment: SEED_HEX (64 hex digits; default: SHA-256 of "boulevard dieharder"), BLOCKS
# (default 4), GENERATOR (c|python), PYTHON (default .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
BLOCKS="${BLOCKS:-4}"
command -v dieharder >/dev/null || { echo "dieharder not found: apt-get install dieharder" >&2; exit 2; }
if [ $# -eq 0 ]; then set -- -a; fi

SEED_HEX="${SEED_HEX:-$("$PYTHON" -c 'import hashlib; print(hashlib.sha256(b"boulevard dieharder").hexdigest())')}"
GAME_ID="dieharder"
COMBINED_HEX="$("$PYTHON" -c 'from boulevard.fairness import combine_client_seeds as c; print(c(["alice", "bob", "carol"]).hex())')"
export SEED_HEX BLOCKS GAME_ID

python_stream() {
  "$PYTHON" - <<'PY'
import os, sys
from itertools import count

from boulevard.fairness import combine_client_seeds, outcome_blocks

seed = bytes.fromhex(os.environ["SEED_HEX"])
blocks = int(os.environ["BLOCKS"])
limit = int(os.environ.get("MAX_BYTES", "0"))
combined = combine_client_seeds(["alice", "bob", "carol"])
out = sys.stdout.buffer
written = 0
try:
    chunk: list[bytes] = []
    for nonce in count():
        stream = outcome_blocks(seed, combined, os.environ["GAME_ID"], nonce)
        chunk.extend(next(stream) for _ in range(blocks))
        if len(chunk) >= 2048:
            out.write(b"".join(chunk))
            written += 32 * len(chunk)
            chunk.clear()
            if limit and written >= limit:
                break
except BrokenPipeError:  # dieharder has read all it wants
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
PY
}

GENERATOR="${GENERATOR:-}"
if [ -z "$GENERATOR" ]; then
  if command -v gcc >/dev/null && [ -f /usr/include/openssl/sha.h ]; then GENERATOR=c; else GENERATOR=python; fi
fi

echo "# stream: seed sha256=$(printf %s "$SEED_HEX" | xxd -r -p | sha256sum | cut -c1-64) blocks/nonce=$BLOCKS generator=$GENERATOR" >&2
if [ "$GENERATOR" = python ]; then
  set +o pipefail  # the generator dies of SIGPIPE when dieharder is done: that is success
  python_stream | dieharder -g 200 "$@"
  exit "${PIPESTATUS[1]}"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cat > "$WORK/gen.c" <<'C'
/* The fairness stream (docs/fairness.md) in C, for speed: for nonce = 0, 1, 2, ... write
   blocks 0..B-1 of HMAC-SHA256(server_seed, combined ‖ u32(len g) ‖ g ‖ u64(nonce) ‖ u32(i)). */
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex(const char *s, unsigned char *out, size_t n) {
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) { unsigned v; if (sscanf(s + 2 * i, "%2x", &v) != 1) return -1; out[i] = (unsigned char)v; }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) { fprintf(stderr, "usage: gen SEED_HEX COMBINED_HEX GAME_ID BLOCKS MAX_BYTES(0=inf)\n"); return 2; }
    unsigned char seed[32], combined[32];
    if (hex(argv[1], seed, 32) || hex(argv[2], combined, 32)) { fprintf(stderr, "bad hex\n"); return 2; }
    const char *game = argv[3];
    size_t glen = strlen(game);
    unsigned blocks = (unsigned)atoi(argv[4]);
    unsigned long long max_bytes = strtoull(argv[5], NULL, 10), written = 0;
    unsigned char msg[32 + 4 + 256 + 8 + 4];
    size_t m = 0;
    memcpy(msg, combined, 32); m = 32;
    msg[m++] = (unsigned char)(glen >> 24); msg[m++] = (unsigned char)(glen >> 16); msg[m++] = (unsigned char)(glen >> 8); msg[m++] = (unsigned char)glen;
    memcpy(msg + m, game, glen); m += glen;
    size_t nonce_at = m; m += 8; size_t block_at = m; m += 4;
    unsigned char ipad[64], opad[64];
    for (int i = 0; i < 64; i++) { ipad[i] = 0x36; opad[i] = 0x5c; }
    for (int i = 0; i < 32; i++) { ipad[i] ^= seed[i]; opad[i] ^= seed[i]; }
    SHA256_CTX inner0, outer0, c;
    SHA256_Init(&inner0); SHA256_Update(&inner0, ipad, 64);
    SHA256_Init(&outer0); SHA256_Update(&outer0, opad, 64);
    static unsigned char buf[1 << 16];
    size_t used = 0;
    unsigned char ih[32];
    for (uint64_t nonce = 0;; nonce++) {
        for (int k = 0; k < 8; k++) msg[nonce_at + k] = (unsigned char)(nonce >> (56 - 8 * k));
        for (uint32_t b = 0; b < blocks; b++) {
            msg[block_at] = (unsigned char)(b >> 24); msg[block_at + 1] = (unsigned char)(b >> 16);
            msg[block_at + 2] = (unsigned char)(b >> 8); msg[block_at + 3] = (unsigned char)b;
            c = inner0; SHA256_Update(&c, msg, m); SHA256_Final(ih, &c);
            c = outer0; SHA256_Update(&c, ih, 32); SHA256_Final(buf + used, &c);
            used += 32;
            if (used == sizeof buf) {
                if (fwrite(buf, 1, used, stdout) != used) return 0; /* reader closed the pipe */
                written += used; used = 0;
                if (max_bytes && written >= max_bytes) return 0;
            }
        }
    }
}
C
gcc -O2 -Wno-deprecated-declarations -o "$WORK/gen" "$WORK/gen.c" -lcrypto
# The C generator must be the scheme: compare its first MiB with boulevard.fairness's.
MAX_BYTES=1048576 python_stream > "$WORK/ref.bin"
"$WORK/gen" "$SEED_HEX" "$COMBINED_HEX" "$GAME_ID" "$BLOCKS" 1048576 > "$WORK/c.bin"
cmp -s "$WORK/ref.bin" "$WORK/c.bin" || { echo "C generator differs from boulevard.fairness" >&2; exit 1; }
echo "# C generator matches boulevard.fairness on the first MiB" >&2
set +o pipefail  # the generator dies of SIGPIPE when dieharder is done: that is success
"$WORK/gen" "$SEED_HEX" "$COMBINED_HEX" "$GAME_ID" "$BLOCKS" 0 | dieharder -g 200 "$@"
exit "${PIPESTATUS[1]}"
