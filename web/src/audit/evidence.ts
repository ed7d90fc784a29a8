// Fetch everything the audit needs about one finished game from the platform's public APIs
// (engine, dice, ledger over Connect), and the receipts this browser kept while playing.

import { Code, ConnectError, type Client } from "@connectrpc/connect";
import type { DiceService, DiceTreeHead, LogRecord } from "../gen/boulevard/v1/dice_pb";
import type { EngineService, LoggedEnvelope } from "../gen/boulevard/v1/engine_pb";
import type { LedgerEntry, LedgerService, SignedTreeHead } from "../gen/boulevard/v1/ledger_pb";

export interface StoredReceipt {
  gameId: string;
  version: number;
  chainHead: string; // hex
  keyId: string;
  signature: string; // hex
  timeUnixMs?: number; // v2 receipts: when the engine accepted the move (0 or absent: v1)
}

export interface Evidence {
  gameId: string;
  finished: boolean;
  log: LoggedEnvelope[];
  engineKey: { publicKey: string; keyId: string };
  receipts: StoredReceipt[];
  dice: { records: LogRecord[]; heads: DiceTreeHead[]; publicKey: Uint8Array };
  ledger: {
    entries: LedgerEntry[]; // the game's, in journal order
    heads: SignedTreeHead[]; // the signed heads from the one covering the game's first entry to the latest
    consistency: Uint8Array[][]; // consistency[i]: heads[i] → heads[i + 1]
    inclusion: Uint8Array[][]; // inclusion[i]: entries[i] under the last head
    publicKey: Uint8Array;
  };
}

export interface Services {
  engine: Client<typeof EngineService>;
  dice: Client<typeof DiceService>;
  ledger: Client<typeof LedgerService>;
}

/** The whole log, page by page. */
export async function fetchLog(engine: Services["engine"], gameId: string): Promise<{ log: LoggedEnvelope[]; finished: boolean }> {
  const log: LoggedEnvelope[] = [];
  let from = 1n;
  let finished = false;
  for (;;) {
    const page = await engine.getGameLog({ gameId, fromVersion: from, pageSize: 1000 });
    log.push(...page.envelopes);
    finished = page.finished;
    if (page.nextFromVersion === 0n) break;
    from = page.nextFromVersion;
  }
  return { log, finished };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The evidence of a finished game. Right after its end, the dice reveal, the ledger's
 * anchor and the signed head over it land within a second or two: this waits up to
 * `waitMs` for them (the Python `audit game` waits likewise), then hands over what there
 * is, for the verifier to judge. */
export async function fetchEvidence(s: Services, gameId: string, receipts: StoredReceipt[], waitMs = 15_000): Promise<Evidence> {
  const until = Date.now() + waitMs;
  const { log, finished } = await fetchLog(s.engine, gameId);
  const key = await s.engine.getEngineKey({});
  let records: LogRecord[];
  for (;;) {
    try {
      records = (await s.dice.listLogRecords({ gameId })).records;
      break;
    } catch (err) {
      // FAILED_PRECONDITION until the dice service has revealed the seed.
      if (!(err instanceof ConnectError && err.code === Code.FailedPrecondition) || Date.now() > until) throw err;
      await sleep(300);
    }
  }
  const dh = await s.dice.getLogHeads({ gameId, treeSize: 0n });

  let entries: LedgerEntry[];
  let latest;
  for (;;) {
    entries = [];
    let pageToken = "";
    do {
      const page = await s.ledger.listEntries({ gameId, pageSize: 1000, pageToken });
      entries.push(...page.entries);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    latest = await s.ledger.getTreeHead({ treeSize: 0n });
    const lastSeq = entries.length > 0 ? entries[entries.length - 1]!.seq : 0n;
    const anchored = entries.some((e) => e.eventType === "GameFinished");
    if ((anchored && (latest.head?.treeSize ?? 0n) >= lastSeq) || !finished || Date.now() > until) break;
    await sleep(300);
  }
  let pageToken = "";
  const firstSeq = entries.length > 0 ? entries[0]!.seq : latest.head!.treeSize;
  // The signed heads over the game's lifetime: from the first covering its first entry.
  const all: SignedTreeHead[] = [];
  do {
    const page = await s.ledger.listTreeHeads({ pageSize: 1000, pageToken });
    all.push(...page.heads);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  const latestHead = latest.head!;
  // Entries posted after the latest signed head cannot be proven yet: the verifier says so.
  entries = entries.filter((e) => e.seq <= latestHead.treeSize);
  const heads = all.filter((h) => h.treeSize >= firstSeq && h.treeSize <= latestHead.treeSize);
  if (heads.length === 0 || heads[heads.length - 1]!.treeSize !== latestHead.treeSize) heads.push(latestHead);
  const consistency: Uint8Array[][] = [];
  for (let i = 0; i + 1 < heads.length; i++) {
    const p = await s.ledger.getConsistencyProof({ firstTreeSize: heads[i]!.treeSize, secondTreeSize: heads[i + 1]!.treeSize });
    consistency.push(p.hashes);
  }
  const inclusion: Uint8Array[][] = [];
  for (let i = 0; i < entries.length; i += 1000) {
    const batch = entries.slice(i, i + 1000);
    const p = await s.ledger.getInclusionProof({ treeSize: latestHead.treeSize, leafIndexes: batch.map((e) => e.seq - 1n) });
    inclusion.push(...p.proofs.map((x) => x.hashes));
  }
  return {
    gameId,
    finished,
    log,
    engineKey: { publicKey: key.publicKey, keyId: key.keyId },
    receipts,
    dice: { records, heads: dh.heads, publicKey: dh.publicKey },
    ledger: { entries, heads, consistency, inclusion, publicKey: latest.publicKey },
  };
}

