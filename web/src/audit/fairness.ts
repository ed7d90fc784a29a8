// The dice scheme boulevard-fairness-v1 (docs/fairness.md), re-derived in the browser:
// every roll and shuffle is HMAC-SHA256(server_seed, combined ‖ lp32(game_id) ‖ u64(nonce) ‖
// u32(block)) read 4 bytes at a time, with rejection sampling.

import { compareBytes, concat, hex, u32, u64, utf8 } from "./bytes";
import { hmacKey, sha256 } from "./crypto";

export const SCHEME = "boulevard-fairness-v1";

/** `hex(SHA256(server_seed))`: the commitment published before any roll. */
export async function commitmentOf(serverSeed: Uint8Array): Promise<string> {
  return hex(await sha256(serverSeed));
}

/** A seat's seed commitment: `hex(SHA256(utf8(seed)))`. */
export async function seedCommitment(seed: string): Promise<string> {
  return hex(await sha256(utf8(seed)));
}

/** The combined client seed: SHA-256 over the seeds' UTF-8 bytes sorted bytewise, each
 * preceded by its 4-byte length (duplicates and empty seeds kept). */
export async function combinedClientSeed(seeds: readonly string[]): Promise<Uint8Array> {
  const parts = seeds.map(utf8).sort(compareBytes);
  return sha256(concat(...parts.flatMap((p) => [u32(p.length), p])));
}

/** The byte stream of one outcome, read 4 bytes per draw. */
export class OutcomeStream {
  private buf: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private block = 0;
  /** How many 4-byte values were read, rejections included. */
  draws = 0;

  private constructor(
    private readonly mac: (m: Uint8Array) => Promise<Uint8Array>,
    private readonly prefix: Uint8Array,
  ) {}

  static async open(
    serverSeed: Uint8Array,
    combined: Uint8Array,
    gameId: string,
    nonce: bigint,
  ): Promise<OutcomeStream> {
    const g = utf8(gameId);
    return new OutcomeStream(await hmacKey(serverSeed), concat(combined, u32(g.length), g, u64(nonce)));
  }

  /** The HMAC message of block `i` (for the vectors). */
  message(i: number): Uint8Array {
    return concat(this.prefix, u32(i));
  }

  async raw(): Promise<number> {
    if (this.pos + 4 > this.buf.length) {
      this.buf = concat(this.buf.subarray(this.pos), await this.mac(this.message(this.block)));
      this.pos = 0;
      this.block += 1;
    }
    const x = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 4).getUint32(0);
    this.pos += 4;
    this.draws += 1;
    return x;
  }

  /** An unbiased integer in [0, n), 1 ≤ n ≤ 2³²: values at or above the largest multiple
   * of n that fits in 2³² are thrown away. */
  async uniform(n: number): Promise<number> {
    if (!Number.isInteger(n) || n < 1 || n > 2 ** 32) throw new Error(`uniform(${n})`);
    const limit = 2 ** 32 - (2 ** 32 % n);
    for (;;) {
      const x = await this.raw();
      if (x < limit) return x % n;
    }
  }
}

export type OutcomeKind = "roll" | "shuffle";

/** The values of outcome `nonce`: `count` dice of `sides` faces (1..sides) for a roll, a
 * Fisher–Yates permutation of 0..count−1 (top first) for a shuffle. */
export async function deriveOutcome(
  serverSeed: Uint8Array,
  combined: Uint8Array,
  gameId: string,
  nonce: bigint,
  kind: OutcomeKind,
  count: number,
  sides: number,
): Promise<number[]> {
  const stream = await OutcomeStream.open(serverSeed, combined, gameId, nonce);
  if (kind === "roll") {
    if (count < 1 || count > 10_000 || sides < 1 || sides > 2 ** 32) {
      throw new Error(`invalid roll: ${count}d${sides}`);
    }
    const out: number[] = [];
    for (let i = 0; i < count; i++) out.push(1 + (await stream.uniform(sides)));
    return out;
  }
  if (count < 0 || count > 1_000_000) throw new Error(`invalid shuffle of ${count}`);
  const a = Array.from({ length: count }, (_, i) => i);
  for (let i = count - 1; i >= 1; i--) {
    const j = await stream.uniform(i + 1);
    [a[i], a[j]] = [a[j] as number, a[i] as number];
  }
  return a;
}

/** Whether a seat's seed in the seeds record agrees with its commitment (docs/fairness.md,
 * step 3): a seat that committed to no seed (`""`) or missed the deadline plays with `""`;
 * any other seat's seed hashes to its commitment. */
export async function seedMatchesCommitment(
  seed: string,
  commitment: string,
  missing: boolean,
): Promise<boolean> {
  if (commitment === "" || missing) return seed === "";
  return (await seedCommitment(seed)) === commitment.toLowerCase();
}
