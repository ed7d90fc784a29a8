// The TypeScript verifier against the Python verifier's published vectors
// (docs/auditing-vectors.json, docs/fairness-vectors.json). Run by tests/browser/test_build.py in
// node (whose WebCrypto is the same API the browser's is).

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ActionSchema } from "../src/gen/boulevard/v1/engine_pb";
import { equal, fromHex, hex } from "../src/audit/bytes";
import { ed25519Verify, sha256 } from "../src/audit/crypto";
import {
  combinedClientSeed,
  commitmentOf,
  deriveOutcome,
  OutcomeStream,
  seedCommitment,
  seedMatchesCommitment,
  type OutcomeKind,
} from "../src/audit/fairness";
import { leafHash } from "../src/audit/merkle";
import { chainHash, commandSigningBytes, keyId, receiptSigningBytes } from "../src/audit/signing";
import { diceAnchorProblem } from "../src/audit/verify";

/* eslint-disable @typescript-eslint/no-explicit-any */
type AnyJson = any;

export interface VectorReport {
  checked: number;
  failures: string[];
}

export async function checkVectors(auditing: AnyJson, fairness: AnyJson): Promise<VectorReport> {
  const report: VectorReport = { checked: 0, failures: [] };
  const check = (ok: boolean, what: string) => {
    report.checked += 1;
    if (!ok) report.failures.push(what);
  };

  // The page signs toBinary(ActionSchema, action): it must be the engine's deterministic
  // encoding. Las Vegas PlaceDice{seat 1, number 3} made here, and every vector's action
  // decoded and re-encoded, give the vectors' bytes (a zero seat is left out).
  const made = create(ActionSchema, { game: { case: "lasVegas", value: { command: { case: "placeDice", value: { seat: 1, number: 3 } } } } });
  check(hex(toBinary(ActionSchema, made)) === "5a060a0408011003", "the page's Action encoding");
  const seat0 = create(ActionSchema, { game: { case: "lasVegas", value: { command: { case: "placeDice", value: { seat: 0, number: 4 } } } } });
  check(hex(toBinary(ActionSchema, seat0)) === "5a040a021004", "the page's Action encoding, seat 0");
  for (const c of auditing.commands) {
    check(hex(toBinary(ActionSchema, fromBinary(ActionSchema, fromHex(c.action)))) === c.action, `command ${c.name}: action re-encodes`);
    const bytes = commandSigningBytes(c.game_id, c.seat, BigInt(c.expected_version), c.idempotency_key, fromHex(c.action));
    check(hex(bytes) === c.signing_bytes, `command ${c.name}: signing bytes`);
    const pk = fromHex(c.public_key);
    check(await ed25519Verify(pk, fromHex(c.signature), bytes), `command ${c.name}: signature verifies`);
    const tampered = bytes.slice();
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] as number) ^ 1;
    check(!(await ed25519Verify(pk, fromHex(c.signature), tampered)), `command ${c.name}: a changed byte fails`);
  }
  let prev: Uint8Array = new Uint8Array(32);
  for (const e of auditing.chain.envelopes) {
    check(hex(prev) === e.prev_hash, `chain v${e.version}: prev_hash`);
    const h = await chainHash(fromHex(e.stored));
    check(hex(h) === e.chain_hash, `chain v${e.version}: chain hash`);
    prev = h;
  }
  for (const r of auditing.receipts) {
    const pk = fromHex(r.public_key);
    check((await keyId(pk)) === r.key_id, `receipt ${r.name}: key id`);
    const bytes = receiptSigningBytes(r.game_id, BigInt(r.version), fromHex(r.chain_head), BigInt(r.time_unix_ms ?? 0));
    check(hex(bytes) === r.signing_bytes, `receipt ${r.name}: signing bytes`);
    check(await ed25519Verify(pk, fromHex(r.signature), bytes), `receipt ${r.name}: signature verifies`);
    const other = receiptSigningBytes(r.game_id, BigInt(r.version) + 1n, fromHex(r.chain_head), BigInt(r.time_unix_ms ?? 0));
    check(!(await ed25519Verify(pk, fromHex(r.signature), other)), `receipt ${r.name}: another version fails`);
  }

  // GameFinished's dice head against a served dice log: passes and fails as Python's does.
  const anchors = auditing.dice_anchors;
  const dicePk = fromHex(anchors.public_key);
  const diceKid = await keyId(dicePk);
  for (const c of anchors.cases) {
    const hashes = await Promise.all(c.leaves.map((x: string) => leafHash(fromHex(x))));
    const problem = await diceAnchorProblem(anchors.game_id, c.dice_head, hashes, dicePk, diceKid);
    check((problem === null) === c.ok, `dice anchor ${c.name}: ${c.ok ? "passes" : "fails"} (${problem})`);
  }

  for (const c of fairness.cases) {
    const seed = fromHex(c.server_seed);
    check((await commitmentOf(seed)) === c.commitment, `fairness ${c.name}: commitment`);
    const combined = await combinedClientSeed(c.client_seeds);
    check(hex(combined) === c.combined_client_seed, `fairness ${c.name}: combined client seed`);
    for (const b of c.blocks) {
      const stream = await OutcomeStream.open(seed, combined, c.game_id, BigInt(b.nonce));
      const message = stream.message(b.block);
      check(hex(message) === b.message, `fairness ${c.name}: message of nonce ${b.nonce} block ${b.block}`);
    }
    for (const o of c.outcomes) {
      const values = await deriveOutcome(seed, combined, c.game_id, BigInt(o.nonce), o.kind as OutcomeKind, o.count, o.sides);
      check(JSON.stringify(values) === JSON.stringify(o.values), `fairness ${c.name}: values of nonce ${o.nonce}`);
      const stream = await OutcomeStream.open(seed, combined, c.game_id, BigInt(o.nonce));
      const raw: number[] = [];
      for (let i = 0; i < o.first_raw_u32.length; i++) raw.push(await stream.raw());
      check(JSON.stringify(raw) === JSON.stringify(o.first_raw_u32), `fairness ${c.name}: raw draws of nonce ${o.nonce}`);
    }
    // The HMAC blocks themselves, through the stream (block i is raw draws 8i..8i+7).
    for (const b of c.blocks) {
      if (b.block > 3) continue;
      const stream = await OutcomeStream.open(seed, combined, c.game_id, BigInt(b.nonce));
      const words: number[] = [];
      for (let i = 0; i < 8 * (b.block + 1); i++) words.push(await stream.raw());
      const block = new Uint8Array(32);
      const view = new DataView(block.buffer);
      words.slice(8 * b.block).forEach((w, i) => view.setUint32(4 * i, w));
      check(hex(block) === b.hmac, `fairness ${c.name}: hmac of nonce ${b.nonce} block ${b.block}`);
    }
  }
  for (const o of fairness.openings) {
    for (const s of o.seats) {
      if (s.seed_commitment !== "") {
        check((await seedCommitment(s.client_seed)) === s.seed_commitment, `opening ${o.name}: seat ${s.seat} commitment`);
      }
      const used = o.client_seeds_used[s.seat];
      const missing = o.missing_seats.includes(s.seat);
      check(await seedMatchesCommitment(used, s.seed_commitment, missing), `opening ${o.name}: seat ${s.seat} plays with its committed seed`);
      if (used !== "") check(!(await seedMatchesCommitment(used + "x", s.seed_commitment, missing)), `opening ${o.name}: another seed fails`);
    }
    const combined = await combinedClientSeed(o.client_seeds_used);
    check(hex(combined) === o.combined_client_seed, `opening ${o.name}: combined seed`);
    const seed = fromHex(o.server_seed);
    check((await commitmentOf(seed)) === o.commitment, `opening ${o.name}: commitment`);
    for (const x of o.outcomes) {
      const values = await deriveOutcome(seed, combined, o.game_id, BigInt(x.nonce), x.kind as OutcomeKind, x.count, x.sides);
      check(JSON.stringify(values) === JSON.stringify(x.values), `opening ${o.name}: values of nonce ${x.nonce}`);
    }
  }
  const u = fairness.uniform;
  const base = fairness.cases.find((c: AnyJson) => c.name === u.case);
  check(base !== undefined, `uniform: case ${u.case} exists`);
  if (base !== undefined) {
    const seed = fromHex(base.server_seed);
    const combined = await combinedClientSeed(base.client_seeds);
    for (const d of u.draws) {
      const stream = await OutcomeStream.open(seed, combined, base.game_id, BigInt(d.nonce));
      const results: number[] = [];
      for (let i = 0; i < d.results.length; i++) results.push(await stream.uniform(d.n));
      check(JSON.stringify(results) === JSON.stringify(d.results), `uniform(${d.n}): results`);
      check(stream.draws === d.raw_draws_consumed, `uniform(${d.n}): ${stream.draws} raw draws, not ${d.raw_draws_consumed}`);
    }
  }
  check(equal(await sha256(new Uint8Array(0)), fromHex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")), "sha256('')");
  return report;
}
