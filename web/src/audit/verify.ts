// The in-browser audit of one finished game, over evidence fetched from the public APIs
// (evidence.ts). It runs four groups of checks and stops at the first failure, naming the
// record that failed:
//
//   log     every envelope decodes, is numbered 1, 2, 3, …, names the game, chains to the one
//           before (docs/auditing.md, "The chain hash") and hashes to the served chain hash;
//           every payload is canonical JSON; every CommandAccepted is signed by its seat's key
//           over the exact command bytes, with an idempotency key used once; nothing follows
//           GameFinished, and a finished game ends with it;
//   receipts every receipt this browser holds verifies under the engine's key and names the
//           log's chain hash at its version;
//   dice    the signed outcome log (heads signed, roots re-computed), the reveal against the
//           commitment, each seat's seed against its commitment, every outcome re-derived
//           from the seeds (docs/fairness.md) and used, in order, by the log's ChanceResolved;
//           GameFinished's dice head signed by the dice key over exactly the records before
//           the reveal (required when GameCreated promises it: docs/auditing.md);
//   ledger  the signed tree head, each of the game's entries canonical and balanced and
//           included under it, successive heads consistent, each event's transfers posted
//           exactly, and the game's end anchored with the log's chain head (docs/ledger.md).
//
// What it does not do is re-run the game's rules: that every event follows from the moves
// under the rulebook is `boulevard audit game`'s part (the rules are Python).

import { fromBinary } from "@bufbuild/protobuf";
import { DiceRecordSchema, OutcomeKind, type DiceOutcome } from "../gen/boulevard/v1/dice_pb";
import { EventEnvelopeSchema, type EventEnvelope } from "../gen/boulevard/v1/events_pb";
import { equal, fromHex, hex } from "./bytes";
import { canonicalBytes, parseCanonical, type Json } from "./canonical";
import { ed25519Verify } from "./crypto";
import { combinedClientSeed, commitmentOf, deriveOutcome, SCHEME, seedMatchesCommitment } from "./fairness";
import { leafHash, rootOf, verifyConsistency, verifyInclusion } from "./merkle";
import { chainHash, commandSigningBytes, keyId, receiptSigningBytes } from "./signing";
import type { Evidence } from "./evidence";

export type Check = "log" | "receipts" | "dice" | "ledger";

export interface Failure {
  check: Check;
  /** The game log version, dice record or ledger entry that failed, in words. */
  where: string;
  version?: number;
  message: string;
  /** The record that failed, for people (decoded where possible). */
  record?: string;
}

export interface Histogram {
  purpose: string;
  sides: number;
  counts: number[]; // counts[face - 1]
}

export interface Verdict {
  ok: boolean;
  gameId: string;
  failure?: Failure;
  passed: string[]; // one line per group that passed
  events: number;
  commands: number;
  outcomes: number;
  receipts: number;
  ledgerEntries: number;
  chainHead: string;
  histograms: Histogram[];
}

class AuditFailed extends Error {
  constructor(readonly failure: Failure) {
    super(failure.message);
  }
}

function fail(check: Check, where: string, message: string, extra: Partial<Failure> = {}): never {
  throw new AuditFailed({ check, where, message, ...extra });
}

type Obj = { [key: string]: Json };
const asObj = (j: Json | undefined): Obj => (j !== null && typeof j === "object" && !Array.isArray(j) ? j : {});
const num = (j: Json | undefined): number => (typeof j === "number" ? j : NaN);
const str = (j: Json | undefined): string => (typeof j === "string" ? j : "");
const arr = (j: Json | undefined): Json[] => (Array.isArray(j) ? j : []);

interface LogEvent {
  version: number;
  env: EventEnvelope;
  payload: Obj;
  chain: Uint8Array;
}

/** Audit the game from `evidence`; never throws for a failed check (the verdict says). */
export async function verifyGame(evidence: Evidence): Promise<Verdict> {
  const v: Verdict = {
    ok: false,
    gameId: evidence.gameId,
    passed: [],
    events: 0,
    commands: 0,
    outcomes: 0,
    receipts: 0,
    ledgerEntries: 0,
    chainHead: "",
    histograms: [],
  };
  try {
    const log = await checkLog(evidence, v);
    await checkReceipts(evidence, log, v);
    await checkDice(evidence, log, v);
    await checkLedger(evidence, log, v);
    v.ok = true;
  } catch (err) {
    if (err instanceof AuditFailed) v.failure = err.failure;
    else v.failure = { check: "log", where: "the evidence", message: `could not audit: ${String(err)}` };
  }
  return v;
}

async function checkLog(e: Evidence, v: Verdict): Promise<LogEvent[]> {
  const out: LogEvent[] = [];
  let prev: Uint8Array = new Uint8Array(32);
  const keys = new Set<string>();
  let seats: Obj[] = [];
  let finishedAt = 0;
  for (const [i, logged] of e.log.entries()) {
    const version = i + 1;
    const where = `game log version ${version}`;
    const rec = { version };
    if (Number(logged.version) !== version) fail("log", where, `the log serves version ${logged.version} at position ${version}`, rec);
    if (logged.redacted) fail("log", where, "a redacted envelope in a finished game's log", rec);
    let env: EventEnvelope;
    try {
      env = fromBinary(EventEnvelopeSchema, logged.envelope);
    } catch {
      fail("log", where, "the stored envelope does not decode", rec);
    }
    const record = `${env.type} ${new TextDecoder().decode(env.payload)}`;
    const r = { version, record };
    if (Number(env.version) !== version) fail("log", where, `the envelope says version ${env.version}`, r);
    if (env.gameId !== e.gameId) fail("log", where, `the envelope names game ${env.gameId}`, r);
    if (!equal(env.prevHash, prev)) {
      fail("log", where, `prev_hash ${hex(env.prevHash)} is not the chain hash of version ${version - 1} (${hex(prev)}): the history before it was changed`, r);
    }
    const h = await chainHash(logged.envelope);
    if (!equal(h, logged.chainHash)) {
      fail("log", where, `the stored bytes hash to ${hex(h)}, not the served chain hash ${hex(logged.chainHash)}: the envelope was changed`, r);
    }
    prev = h;
    const payload = parseCanonical(env.payload);
    if (payload === undefined || str(asObj(payload).type) !== env.type) {
      fail("log", where, "the payload is not canonical JSON of its event type", r);
    }
    const p = asObj(payload);
    if (finishedAt) fail("log", where, `an event after GameFinished (version ${finishedAt})`, r);
    if (version === 1) {
      if (env.type !== "GameCreated") fail("log", where, "the log does not open with GameCreated", r);
      seats = arr(p.seats).map(asObj);
      for (const [n, s] of seats.entries()) {
        if (num(s.seat) !== n || !/^[0-9a-f]{64}$/.test(str(s.public_key))) {
          fail("log", where, `seat ${n} is not numbered in order with a valid key`, r);
        }
      }
    } else if (env.type === "CommandAccepted") {
      const seat = seats[num(p.seat)];
      if (seat === undefined) fail("log", where, `a command for seat ${p.seat}, which the game does not have`, r);
      if (str(p.player_id) !== str(seat.player_id)) fail("log", where, `seat ${p.seat} is ${seat.player_id}, not ${p.player_id}`, r);
      const key = str(p.idempotency_key);
      if (key === "" || keys.has(key)) fail("log", where, `idempotency key ${JSON.stringify(key)} is empty or used twice`, r);
      keys.add(key);
      const ev = num(p.expected_version);
      if (ev !== 0 && ev !== version - 1) fail("log", where, `signed for version ${ev}, applied after ${version - 1}`, r);
      let action: Uint8Array;
      let signature: Uint8Array;
      try {
        action = fromHex(str(p.action));
        signature = fromHex(str(p.signature));
      } catch {
        fail("log", where, "the action or signature is not hex", r);
      }
      const bytes = commandSigningBytes(e.gameId, num(p.seat), BigInt(ev), key, action);
      if (!(await ed25519Verify(fromHex(str(seat.public_key)), signature, bytes))) {
        fail("log", where, `the signature is not seat ${p.seat}'s (key ${str(seat.public_key).slice(0, 16)}…) over this command`, r);
      }
      v.commands += 1;
    } else if (env.type === "GameFinished") {
      finishedAt = version;
    }
    out.push({ version, env, payload: p, chain: h });
  }
  if (out.length === 0) fail("log", "the game log", "the log is empty");
  if (e.finished && !finishedAt) fail("log", `game log version ${out.length}`, "the game is said to be finished but its log does not end with GameFinished: a truncated log");
  v.events = out.length;
  v.chainHead = hex(prev);
  v.passed.push(`log: ${out.length} events chained to head ${v.chainHead.slice(0, 16)}…, ${v.commands} signed commands verified`);
  return out;
}

async function checkReceipts(e: Evidence, log: LogEvent[], v: Verdict): Promise<void> {
  const pk = fromHex(e.engineKey.publicKey);
  if ((await keyId(pk)) !== e.engineKey.keyId) fail("receipts", "the engine key", "the engine's key id is not the SHA-256 of its key");
  for (const r of e.receipts) {
    const where = `receipt for version ${r.version}`;
    if (r.gameId !== e.gameId) fail("receipts", where, `a receipt for game ${r.gameId}`);
    if (r.keyId !== e.engineKey.keyId) fail("receipts", where, `signed by key ${r.keyId}, not the engine's ${e.engineKey.keyId}`);
    const time = r.timeUnixMs ?? 0;
    const ok = await ed25519Verify(pk, fromHex(r.signature), receiptSigningBytes(r.gameId, BigInt(r.version), fromHex(r.chainHead), time));
    if (!ok) fail("receipts", where, "the receipt's signature does not verify under the engine's key");
    const at = log[r.version - 1];
    if (at === undefined) fail("receipts", where, `the engine signed version ${r.version} but the log ends at ${log.length}: history was deleted`, { version: r.version });
    if (hex(at.chain) !== r.chainHead) {
      fail("receipts", where, `the engine signed chain head ${r.chainHead} at version ${r.version}; the log has ${hex(at.chain)}: history was rewritten`, { version: r.version });
    }
    if (time !== 0 && time !== Number(at.env.timeUnixMs)) {
      fail("receipts", where, `the engine signed time ${time} at version ${r.version}; the envelope says ${at.env.timeUnixMs}`, { version: r.version });
    }
    v.receipts += 1;
  }
  v.passed.push(`receipts: ${v.receipts} held by this browser verified against the log`);
}

async function checkDice(e: Evidence, log: LogEvent[], v: Verdict): Promise<void> {
  const d = e.dice;
  // The signed outcome log: every head signed for this game, its root over the first
  // tree_size records, the last covering them all.
  const pk = d.publicKey;
  const kid = await keyId(pk);
  const leaves = await Promise.all(d.records.map((r) => leafHash(r.record)));
  if (d.heads.length === 0) fail("dice", "the dice log", "no signed head: the dice log is unsigned");
  for (const head of d.heads) {
    const where = `dice head of size ${head.treeSize}`;
    if (head.gameId !== e.gameId) fail("dice", where, `a head for game ${head.gameId}`);
    const body = {
      key_id: head.keyId,
      log_id: e.gameId,
      root_hash: hex(head.rootHash),
      timestamp_unix_ms: Number(head.timestampUnixMs),
      tree_size: Number(head.treeSize),
      type: "boulevard.dice.tree_head.v1",
    };
    if (head.keyId !== kid || !(await ed25519Verify(pk, head.signature, canonicalBytes(body)))) {
      fail("dice", where, "the head is not signed by the dice service's key");
    }
    const size = Number(head.treeSize);
    if (size > leaves.length) fail("dice", where, `the head covers ${size} records; the log serves ${leaves.length}: a record was removed`);
    if (!equal(await rootOf(leaves.slice(0, size)), head.rootHash)) {
      fail("dice", where, `the first ${size} records are not the ones signed: a record up to ${size - 1} was removed, changed or inserted`);
    }
  }
  const last = Math.max(...d.heads.map((h) => Number(h.treeSize)));
  if (last !== leaves.length) fail("dice", `dice record ${last}`, "a record after the last signed head (unsigned)");

  // The records, in their order: opened, seeds, outcomes, revealed.
  const records = d.records.map((r, i) => {
    try {
      return fromBinary(DiceRecordSchema, r.record).record;
    } catch {
      fail("dice", `dice record ${i}`, "the record does not decode");
    }
  });
  const opened = records[0];
  const seeds = records[1];
  const revealed = records[records.length - 1];
  if (opened?.case !== "opened") fail("dice", "dice record 0", "the log does not open with the commitment");
  if (seeds?.case !== "seeds") fail("dice", "dice record 1", "the client seeds do not follow the commitment");
  if (revealed?.case !== "revealed") fail("dice", `dice record ${records.length - 1}`, "the log does not end with the reveal");
  const outcomes: DiceOutcome[] = [];
  for (const [i, r] of records.slice(2, -1).entries()) {
    if (r?.case !== "outcome") fail("dice", `dice record ${i + 2}`, "a record out of order between the seeds and the reveal");
    outcomes.push(r.value);
  }
  const c = opened.value;
  if (c.scheme !== SCHEME) fail("dice", "the commitment", `unknown scheme ${c.scheme}`);
  const serverSeed = fromHex(revealed.value.serverSeed);
  if ((await commitmentOf(serverSeed)) !== c.commitment.toLowerCase()) {
    fail("dice", "the reveal", `the revealed seed does not hash to the commitment ${c.commitment}`);
  }
  const created = log[0]!.payload;
  if (str(created.seed_commitment) !== c.commitment) fail("dice", "game log version 1", "GameCreated's dice commitment is not the one the dice service recorded", { version: 1 });
  const seatsCommitted = arr(created.seats).map((s) => str(asObj(s).seed_commitment));
  if (JSON.stringify(seatsCommitted) !== JSON.stringify(c.clientSeedCommitments)) {
    fail("dice", "game log version 1", "the seats' seed commitments in GameCreated are not the dice service's", { version: 1 });
  }
  const clientSeeds = seeds.value.clientSeeds;
  for (const [seat, commitment] of c.clientSeedCommitments.entries()) {
    const ok = await seedMatchesCommitment(clientSeeds[seat] ?? "", commitment, seeds.value.missingSeats.includes(seat));
    if (!ok) fail("dice", `seat ${seat}'s client seed`, `seat ${seat}'s revealed seed does not hash to its commitment ${commitment}`);
  }
  const fixed = log.find((x) => x.env.type === "ClientSeedsFixed");
  if (fixed === undefined || JSON.stringify(arr(fixed.payload.client_seeds)) !== JSON.stringify(clientSeeds)) {
    fail("dice", `game log version ${fixed?.version ?? 0}`, "ClientSeedsFixed is not the seeds record the outcomes use", { version: fixed?.version ?? 0 });
  }
  const combined = await combinedClientSeed(clientSeeds);
  const chance = log.filter((x) => x.env.type === "ChanceResolved");
  const histograms = new Map<string, Histogram>();
  for (const [i, o] of outcomes.entries()) {
    const where = `dice outcome ${i}`;
    if (Number(o.nonce) !== i) fail("dice", where, `nonce ${o.nonce} recorded where ${i} was next`);
    const kind = o.kind === OutcomeKind.ROLL ? "roll" : "shuffle";
    const want = await deriveOutcome(serverSeed, combined, e.gameId, o.nonce, kind, o.count, Number(o.sides));
    const got = o.values.map(Number);
    if (JSON.stringify(want) !== JSON.stringify(got)) fail("dice", where, `recorded ${JSON.stringify(got)}, the seeds give ${JSON.stringify(want)}`);
    const ev = chance[i];
    if (ev === undefined) fail("dice", where, `${kind} for '${o.purpose}' was drawn but the game never used it (a burned or re-rolled outcome)`);
    const p = ev.payload;
    const r = { version: ev.version, record: `ChanceResolved ${new TextDecoder().decode(ev.env.payload)}` };
    if (num(p.nonce) !== i) fail("dice", `game log version ${ev.version}`, `cites nonce ${p.nonce} where ${i} was next`, r);
    if (str(p.kind) !== kind || str(p.purpose) !== o.purpose || num(p.sides) !== Number(o.sides)) {
      fail("dice", `game log version ${ev.version}`, `asks for ${p.kind} '${p.purpose}' d${p.sides}; the dice drew ${kind} '${o.purpose}' d${o.sides}`, r);
    }
    if (JSON.stringify(arr(p.values)) !== JSON.stringify(got)) {
      fail("dice", `game log version ${ev.version}`, `uses ${JSON.stringify(p.values)}; the dice drew ${JSON.stringify(got)}`, r);
    }
    if (kind === "roll" && o.sides <= 20n) {
      const k = `${o.purpose}/d${o.sides}`;
      const h = histograms.get(k) ?? { purpose: o.purpose, sides: Number(o.sides), counts: new Array<number>(Number(o.sides)).fill(0) };
      for (const x of got) h.counts[x - 1] = (h.counts[x - 1] ?? 0) + 1;
      histograms.set(k, h);
    }
  }
  if (chance.length > outcomes.length) {
    const ev = chance[outcomes.length]!;
    fail("dice", `game log version ${ev.version}`, "uses an outcome the dice service never recorded", { version: ev.version });
  }
  if (Number(revealed.value.outcomeCount) !== outcomes.length) {
    fail("dice", "the reveal", `the reveal says ${revealed.value.outcomeCount} outcomes were issued; ${outcomes.length} are recorded`);
  }
  const anchor = await checkDiceAnchor(e, log, leaves, pk, kid);
  v.outcomes = outcomes.length;
  v.histograms = [...histograms.values()];
  v.passed.push(`dice: ${outcomes.length} outcomes re-derived from the revealed seed, ${d.heads.length} signed heads; ${anchor}`);
}

/** GameFinished's dice head (docs/auditing.md, "The dice anchor"): the dice service's signed
 * head over exactly the records before the reveal (the log's last record), with their
 * root; required when GameCreated promises it (`dice_anchored`). What was found, in words. */
async function checkDiceAnchor(e: Evidence, log: LogEvent[], leafHashes: Uint8Array[], pk: Uint8Array, kid: string): Promise<string> {
  const end = log.find((x) => x.env.type === "GameFinished");
  if (end === undefined) return "the game has not ended";
  const where = `game log version ${end.version}`;
  const r = { version: end.version, record: `GameFinished ${new TextDecoder().decode(end.env.payload)}` };
  const head = end.payload.dice_head;
  if (head === undefined || head === null) {
    if (log[0]!.payload.dice_anchored === true) {
      fail("dice", where, "GameCreated promises that the game's end carries the dice log's signed head (dice_anchored), but GameFinished carries none", r);
    }
    return "the game predates dice anchors";
  }
  const problem = await diceAnchorProblem(e.gameId, asObj(head), leafHashes, pk, kid);
  if (problem !== null) fail("dice", where, problem, r);
  return `GameFinished's dice head anchors its ${num(asObj(head).tree_size)} records`;
}

/** Why `head` (GameFinished's `dice_head`) does not anchor a dice log whose leaf hashes, in
 * order, end with the reveal's; null when it does. Signed by the dice key `pk` (key id
 * `kid`) over the head's canonical JSON, covering every leaf before the reveal, their root. */
export async function diceAnchorProblem(gameId: string, head: Obj, leafHashes: Uint8Array[], pk: Uint8Array, kid: string): Promise<string | null> {
  const size = num(head.tree_size);
  const body = {
    key_id: str(head.key_id),
    log_id: gameId,
    root_hash: str(head.root_hash),
    timestamp_unix_ms: num(head.timestamp_unix_ms),
    tree_size: size,
    type: "boulevard.dice.tree_head.v1",
  };
  let signature: Uint8Array;
  let root: Uint8Array;
  try {
    signature = fromHex(str(head.signature));
    root = fromHex(str(head.root_hash));
  } catch {
    return "the dice head's root or signature is not hex";
  }
  if (str(head.key_id) !== kid || !(await ed25519Verify(pk, signature, canonicalBytes(body)))) {
    return "the dice head GameFinished records is not signed by the dice service's key";
  }
  const before = leafHashes.length - 1; // the reveal is the last record, after GameFinished
  if (size !== before) {
    return `GameFinished anchors the dice log at ${size} records; the dice service serves ${before} before the reveal: records were ${size < before ? "added after the game ended" : "removed since"}`;
  }
  if (!equal(await rootOf(leafHashes.slice(0, size)), root)) {
    return `GameFinished anchors the dice log's root ${str(head.root_hash)}; the served records have another: the dice log was rewritten after the game ended`;
  }
  return null;
}

async function checkLedger(e: Evidence, log: LogEvent[], v: Verdict): Promise<void> {
  const l = e.ledger;
  const kid = await keyId(l.publicKey);
  const checkHead = async (h: (typeof l.heads)[number]) => {
    const body = {
      key_id: h.keyId,
      root_hash: hex(h.rootHash),
      timestamp_unix_ms: Number(h.timestampUnixMs),
      tree_size: Number(h.treeSize),
      type: "boulevard.ledger.tree_head.v1",
    };
    if (h.keyId !== kid || !(await ed25519Verify(l.publicKey, h.signature, canonicalBytes(body)))) {
      fail("ledger", `ledger head of size ${h.treeSize}`, "the head is not signed by the ledger's key");
    }
  };
  for (const h of l.heads) await checkHead(h);
  for (const [i, proof] of l.consistency.entries()) {
    const a = l.heads[i]!;
    const b = l.heads[i + 1]!;
    try {
      await verifyConsistency(Number(a.treeSize), Number(b.treeSize), a.rootHash, b.rootHash, proof);
    } catch (err) {
      fail("ledger", `ledger heads ${a.treeSize} → ${b.treeSize}`, `not consistent: ${String(err)}`);
    }
  }
  const head = l.heads[l.heads.length - 1];
  if (head === undefined) fail("ledger", "the ledger", "no signed tree head");
  const byVersion = new Map<number, [string, number][]>();
  let anchor: { version: number; hash: string } | undefined;
  for (const [i, entry] of l.entries.entries()) {
    const where = `ledger entry ${entry.seq}`;
    const record = new TextDecoder().decode(entry.canonical);
    const j = asObj(parseCanonical(entry.canonical));
    if (num(j.seq) !== Number(entry.seq) || str(j.game_id) !== e.gameId) fail("ledger", where, "the entry is not canonical JSON of this game", { record });
    const h = await leafHash(entry.canonical);
    if (!equal(h, entry.hash)) fail("ledger", where, "the served hash is not the entry's", { record });
    const postings = arr(j.postings).map(asObj);
    if (postings.reduce((s, p) => s + num(p.amount), 0) !== 0) fail("ledger", where, "the postings do not sum to zero", { record });
    if (postings.some((p) => str(p.book) !== e.gameId)) fail("ledger", where, "a posting outside the game's book", { record });
    try {
      await verifyInclusion(Number(entry.seq) - 1, Number(head.treeSize), h, l.inclusion[i] ?? [], head.rootHash);
    } catch (err) {
      fail("ledger", where, `not in the signed tree of size ${head.treeSize}: ${String(err)}`, { record });
    }
    const version = num(j.version);
    if (typeof j.anchor === "string") {
      anchor = { version, hash: j.anchor };
    } else {
      if (byVersion.has(version)) fail("ledger", where, `a second entry for version ${version}`, { record });
      byVersion.set(version, postings.map((p) => [str(p.account), num(p.amount)]));
    }
    v.ledgerEntries += 1;
  }
  const sortP = (ps: [string, number][]) => JSON.stringify([...ps].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1])));
  for (const ev of log) {
    const want: [string, number][] = ev.env.transfers.flatMap((t) => [
      [t.source, -Number(t.amount)] as [string, number],
      [t.target, Number(t.amount)] as [string, number],
    ]);
    const got = byVersion.get(ev.version) ?? [];
    if (sortP(want) !== sortP(got)) {
      fail("ledger", `game log version ${ev.version}`, `the event moves ${sortP(want)} but the ledger posted ${sortP(got)}`, { version: ev.version });
    }
    byVersion.delete(ev.version);
  }
  for (const version of byVersion.keys()) fail("ledger", `ledger entries for version ${version}`, "money posted for a version the log does not have", { version });
  const end = log[log.length - 1]!;
  if (anchor === undefined) fail("ledger", `game log version ${end.version}`, "the ledger anchors no chain head for the game's end", { version: end.version });
  if (anchor.version !== end.version || anchor.hash !== hex(end.chain)) {
    fail("ledger", `game log version ${anchor.version}`, `the ledger anchors ${anchor.hash.slice(0, 16)}… at version ${anchor.version}; the log's end is ${hex(end.chain).slice(0, 16)}… at ${end.version}`, { version: anchor.version });
  }
  v.passed.push(`ledger: ${v.ledgerEntries} entries included under the signed head of size ${head.treeSize}, ${l.consistency.length} consistency proofs, end anchored`);
}

