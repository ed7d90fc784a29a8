// Byte helpers for the signing and hashing formats of docs/auditing.md, docs/fairness.md and
// docs/ledger.md: lowercase hex, big-endian integers, length-prefixed strings.

const encoder = new TextEncoder();

/** The UTF-8 bytes of `s` (no normalisation, no terminator). */
export function utf8(s: string): Uint8Array {
  return encoder.encode(s);
}

/** Lowercase hex of `b`. */
export function hex(b: Uint8Array): string {
  let out = "";
  for (const x of b) out += x.toString(16).padStart(2, "0");
  return out;
}

/** The bytes of a hex string (either case); throws on odd length or a non-hex digit. */
export function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) {
    throw new Error(`not hex: ${s.slice(0, 20)}`);
  }
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `n` as 4 bytes big-endian (0 ≤ n < 2³²). */
export function u32(n: number | bigint): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, Number(n));
  return out;
}

/** `n` as 8 bytes big-endian (0 ≤ n < 2⁶⁴). */
export function u64(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, BigInt(n));
  return out;
}

/** `lp(x)` of docs/auditing.md: `x` preceded by its length as 4 bytes big-endian. */
export function lp(x: Uint8Array | string): Uint8Array {
  const b = typeof x === "string" ? utf8(x) : x;
  return concat(u32(b.length), b);
}

export function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Bytewise (unsigned) order, as Python compares `bytes`. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}
