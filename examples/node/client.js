#!/usr/bin/env node
// A Boulevard client in Node.js, written from protos/ and docs/clients.md alone.
//
// It queues for a game through matchmaking (bots fill the empty seats), reveals its client
// seed, plays legal actions to the end of the game with signed SubmitAction calls while
// watching the game, prints the final ranking and checks the dice commitment against the
// revealed server seed. With --evidence FILE it keeps the seat's evidence file: the receipts
// the engine signed for its reveal and moves, and the dice log's and the ledger's signed
// heads at the end (docs/auditing.md, "Evidence a player keeps").
//
//     npm ci
//     node client.js --token "$(boulevard login alice)"
//
// The .proto files are loaded at run time (@grpc/proto-loader for the calls, protobufjs for
// the bytes a move's signature covers); Ed25519 is node's own crypto.

'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const protobuf = require('protobufjs');

// ---- options ------------------------------------------------------------------------------

function parseArgs(argv) {
  const opts = {
    token: process.env.BOULEVARD_TOKEN || '',
    matchmaking: '127.0.0.1:50051',
    engine: '127.0.0.1:50052',
    dice: '127.0.0.1:50053',
    ledger: '127.0.0.1:50054',
    evidence: '',
    tlsCa: '',
    game: 'las_vegas',
    seats: 2,
    botFill: 1,
    protos: path.resolve(__dirname, '..', '..', 'protos'),
  };
  const names = {
    '--token': 'token', '--matchmaking': 'matchmaking', '--engine': 'engine', '--dice': 'dice',
    '--tls-ca': 'tlsCa', '--game': 'game', '--seats': 'seats', '--bot-fill': 'botFill',
    '--protos': 'protos', '--ledger': 'ledger', '--evidence': 'evidence',
  };
  for (let i = 0; i < argv.length; i += 2) {
    const name = names[argv[i]];
    if (!name || i + 1 >= argv.length) {
      throw new Error(`usage: node client.js [${Object.keys(names).join(' X] [')} X]`);
    }
    opts[name] = ['seats', 'botFill'].includes(name) ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!opts.token) {
    throw new Error('no token: pass --token or set BOULEVARD_TOKEN (`boulevard login <name>`)');
  }
  return opts;
}

// ---- the protos, loaded at run time -------------------------------------------------------

function protoFiles(root) {
  const dir = path.join(root, 'boulevard', 'v1');
  return fs.readdirSync(dir).filter((f) => f.endsWith('.proto')).sort()
    .map((f) => path.join('boulevard', 'v1', f));
}

function loadServices(root) {
  const definition = protoLoader.loadSync(protoFiles(root), {
    includeDirs: [root],
    keepCase: true, // field names as in the .proto files
    longs: String, // uint64/int64 as decimal strings
    enums: String, // enum values by name
    defaults: false, // fields absent on the wire stay absent
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).boulevard.v1;
}

function loadTypes(root) {
  const types = new protobuf.Root();
  types.resolvePath = (_origin, target) => path.join(root, target);
  types.loadSync(protoFiles(root), { keepCase: true });
  return types;
}

// The Action's canonical encoding: fields in field-number order, and a field without
// presence left out when it holds its default (0, "", false, empty) — what the engine's
// deterministic re-encoding gives, so what the signature must cover.
function canonical(type, object) {
  const out = {};
  for (const field of type.fieldsArray) {
    field.resolve();
    const value = object[field.name];
    if (value === undefined || value === null) continue;
    const message = field.resolvedType instanceof protobuf.Type ? field.resolvedType : null;
    if (field.map) {
      if (Object.keys(value).length) out[field.name] = value;
    } else if (field.repeated) {
      if (value.length) out[field.name] = message ? value.map((v) => canonical(message, v)) : value;
    } else if (message) {
      out[field.name] = canonical(message, value);
    } else if (field.partOf || !isDefault(field, value)) {
      out[field.name] = value; // oneof members and `optional` fields keep their presence
    }
  }
  return out;
}

function isDefault(field, value) {
  if (field.resolvedType instanceof protobuf.Enum) {
    return field.resolvedType.values[value] === 0 || value === 0;
  }
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return value.length === 0;
  return value === 0 || value === '0' || value === false || value === '';
}

function encodeAction(types, action) {
  const Action = types.lookupType('boulevard.v1.Action');
  return Buffer.from(Action.encode(Action.fromObject(canonical(Action, action))).finish());
}

// ---- signing (docs/clients.md, "Signing a move") ------------------------------------------

function lp(bytes) {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

function commandBytes(gameId, seat, expectedVersion, idempotencyKey, action) {
  const seatBytes = Buffer.alloc(4);
  seatBytes.writeUInt32BE(seat);
  const version = Buffer.alloc(8);
  version.writeBigUInt64BE(BigInt(expectedVersion));
  return Buffer.concat([
    lp(Buffer.from('boulevard.game.command.v1')), lp(Buffer.from(gameId, 'utf8')), seatBytes,
    version, lp(Buffer.from(idempotencyKey, 'utf8')), lp(action),
  ]);
}

// ---- calls --------------------------------------------------------------------------------

function unary(client, method, request, metadata = new grpc.Metadata(), seconds = 10) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, { deadline: Date.now() + seconds * 1000 }, (err, reply) =>
      (err ? reject(err) : resolve(reply)));
  });
}

const sleep = (ms) => new Promise((r) => { setTimeout(r, ms); });

// Retry UNAVAILABLE (nothing is wrong with the request) with backoff; the request is the same
// object each time, so a SubmitAction keeps its idempotency key and signature.
async function retrying(what, call, attempts = 8) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await call();
    } catch (err) {
      if (err.code !== grpc.status.UNAVAILABLE || attempt === attempts - 1) throw err;
      console.log(`${what}: UNAVAILABLE (${err.details}); retrying`);
      await sleep(Math.min(200 * 2 ** attempt, 3000));
    }
  }
}

function credentials(caFile) {
  return caFile ? grpc.credentials.createSsl(fs.readFileSync(caFile))
    : grpc.credentials.createInsecure();
}

// ---- the client ---------------------------------------------------------------------------

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const v1 = loadServices(opts.protos);
  const types = loadTypes(opts.protos);
  const creds = credentials(opts.tlsCa);
  const mm = new v1.MatchmakingService(opts.matchmaking, creds);
  const engine = new v1.EngineService(opts.engine, creds);
  const dice = new v1.DiceService(opts.dice, creds);
  const auth = new grpc.Metadata();
  auth.set('authorization', `Bearer ${opts.token}`); // exactly one space, no other form

  // 1. A key to sign moves with, and a client seed committed to before the dice exist.
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const publicHex = Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('hex');
  const clientSeed = crypto.randomBytes(16).toString('hex');
  const commitment = crypto.createHash('sha256').update(clientSeed, 'utf8').digest('hex');

  // 2. Queue. The same request_id makes a retry return the same ticket.
  const create = {
    request_id: crypto.randomUUID(), game: opts.game, min_seats: opts.seats,
    max_seats: opts.seats, bot_fill_after_seconds: opts.botFill,
    client_seed_commitment: commitment, public_key: publicHex,
  };
  let { ticket } = await retrying('CreateTicket', () => unary(mm, 'CreateTicket', create, auth));
  console.log(`ticket ${ticket.ticket_id} for ${ticket.player_id}: waiting`);

  // 3. Wait for ASSIGNED: the game exists then, and the ticket carries our seat token.
  const watch = mm.WatchTicket({ ticket_id: ticket.ticket_id }, auth,
    { deadline: Date.now() + 120_000 });
  for await (const update of watch) {
    ticket = update.ticket;
    if (['TICKET_STATUS_CANCELLED', 'TICKET_STATUS_EXPIRED'].includes(ticket.status)) {
      throw new Error(`ticket ended: ${ticket.status_reason}`);
    }
    if (ticket.status === 'TICKET_STATUS_ASSIGNED') break;
  }
  watch.cancel();
  const gameId = ticket.game_id;
  const seat = ticket.seat || 0; // proto3: seat 0 is absent on the wire
  const token = ticket.player_token;
  console.log(`game_id: ${gameId}`);
  console.log(`seat: ${seat}`);

  // 4. Reveal the seed: the game's dice wait for every seat (or the reveal deadline).
  const revealed = await retrying('RevealSeed', () => unary(engine, 'RevealSeed',
    { game_id: gameId, player_token: token, client_seed: clientSeed }));
  console.log(`seed revealed at version ${revealed.version} (all seats: ${!!revealed.all_revealed})`);
  // What the engine signed it accepted for this seat, kept as evidence (docs/auditing.md).
  const accepted = [
    { kind: 'reveal', client_seed: clientSeed, receipt: receiptJson(revealed.receipt) },
  ];

  // 5. Watch the game; whenever a view says it is our turn, play a legal action.
  let diceCommitment = '';
  let finished = null;
  let moves = 0;
  let lastReceipt = null;
  const updates = engine.WatchGame({ game_id: gameId, player_token: token, from_version: 0 },
    new grpc.Metadata(), { deadline: Date.now() + 600_000 });
  for await (const update of updates) {
    const { event } = update;
    const payload = JSON.parse(Buffer.from(event.payload).toString('utf8'));
    if (event.type === 'GameCreated') {
      diceCommitment = payload.seed_commitment;
      console.log(`dice commitment ${diceCommitment}`);
    } else if (event.type === 'GameFinished') {
      finished = payload;
    }
    if (!update.view || !(update.to_act || []).includes(seat)) continue;
    const legal = await unary(engine, 'ListLegalActions', { game_id: gameId, player_token: token });
    if (!legal.actions || !legal.actions.length) continue; // a newer burst is on its way
    const action = legal.actions[crypto.randomInt(legal.actions.length)];
    const expected = legal.version || '0';
    const key = crypto.randomUUID();
    const signed = commandBytes(gameId, seat, expected, key, encodeAction(types, action));
    const request = {
      game_id: gameId, player_token: token, action, expected_version: expected,
      idempotency_key: key, signature: crypto.sign(null, signed, privateKey),
    };
    let reply;
    try {
      reply = await retrying('SubmitAction', () => unary(engine, 'SubmitAction', request));
    } catch (err) {
      if (err.code === grpc.status.ABORTED) continue; // the game moved on: the next view says
      throw err;
    }
    moves += 1;
    lastReceipt = reply.receipt;
    accepted.push({ kind: 'action', idempotency_key: key, receipt: receiptJson(reply.receipt) });
    const placed = action.las_vegas ? `place_dice ${action.las_vegas.place_dice.number}`
      : JSON.stringify(action);
    console.log(`v${reply.version}: played ${placed}`);
  }
  if (!finished) throw new Error('the watch ended before the game did');

  // 6. The result, and the dice checked against the commitment made before any roll.
  const ids = finished.player_ids;
  const { scores } = finished;
  const places = finished.ranking.map((group, i) =>
    `${i + 1}. ${group.map((s) => `${ids[s]} (${scores[s]})`).join(' = ')}`);
  console.log(`game over after ${moves} moves of ours; last receipt at v${lastReceipt.version}`);
  console.log(`ranking: ${places.join('   ')}`);
  let seed = '';
  for (let i = 0; i < 50 && !seed; i += 1) {
    try { // the seed is revealed just after GameFinished is recorded
      seed = (await unary(dice, 'GetReveal', { game_id: gameId })).reveal.server_seed;
    } catch (err) {
      if (err.code !== grpc.status.FAILED_PRECONDITION) throw err;
      await sleep(100);
    }
  }
  const ok = crypto.createHash('sha256').update(Buffer.from(seed, 'hex')).digest('hex')
    === diceCommitment;
  console.log(`dice: revealed seed ${ok ? 'matches' : 'DOES NOT MATCH'} the commitment`);
  if (opts.evidence) {
    const ledger = new v1.LedgerService(opts.ledger, creds);
    const evidence = await keptEvidence(types, dice, ledger, gameId, seat, accepted);
    ledger.close();
    fs.writeFileSync(opts.evidence, `${JSON.stringify(evidence, null, 1)}\n`);
    console.log(`evidence: ${opts.evidence}`);
  }
  console.log(`result: ${JSON.stringify({
    game_id: gameId, seat, ranking: finished.ranking, player_ids: ids, scores, dice_ok: ok,
  })}`);
  mm.close();
  engine.close();
  dice.close();
  return ok ? 0 : 1;
}

// A receipt as an evidence file keeps it: bytes as lowercase hex, numbers as numbers.
function receiptJson(receipt) {
  return {
    game_id: receipt.game_id, version: Number(receipt.version || 0),
    chain_head: Buffer.from(receipt.chain_head || []).toString('hex'), key_id: receipt.key_id,
    signature: Buffer.from(receipt.signature || []).toString('hex'),
    time_unix_ms: Number(receipt.time_unix_ms || 0),
  };
}

// The seat's evidence file: what the engine accepted for it, and the signed heads the dice
// service and the ledger show now, each as the hex of its protobuf bytes (re-encoded with
// protobufjs from what grpc-js decoded: the signatures cover the heads' fields, not these
// bytes). The ledger head kept is the first that covers the game's anchor (the entry that
// records its final chain head, docs/ledger.md "Game anchors"), waited for up to 30 s since
// the ledger signs about a second after it posts; then the latest head, or none if the
// ledger has signed nothing yet (NOT_FOUND).
async function keptEvidence(types, dice, ledger, gameId, seat, accepted) {
  const encode = (name, value) => {
    const type = types.lookupType(`boulevard.v1.${name}`);
    return Buffer.from(type.encode(type.fromObject(value)).finish()).toString('hex');
  };
  const logHeads = await unary(dice, 'GetLogHeads', { game_id: gameId });
  const head = await ledgerHeadOverEnd(ledger, gameId, 30000);
  const ledgerHeads = head ? [encode('SignedTreeHead', head)] : [];
  return {
    game_id: gameId, seat, accepted, ledger_heads: ledgerHeads,
    dice_heads: (logHeads.heads || []).map((h) => encode('DiceTreeHead', h)),
  };
}

async function ledgerHeadOverEnd(ledger, gameId, waitMs) {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const anchor = await anchorSeq(ledger, gameId);
    let head = null;
    try {
      head = (await unary(ledger, 'GetTreeHead', {})).head;
    } catch (err) {
      if (err.code !== grpc.status.NOT_FOUND) throw err;
    }
    if (anchor && head && Number(head.tree_size) >= anchor) return head;
    if (Date.now() >= deadline) {
      console.error("note: the ledger signed no head over the game's end in time");
      return head;
    }
    await sleep(200);
  }
}

// The journal position of the game's anchor entry (0: not posted yet).
async function anchorSeq(ledger, gameId) {
  let token = '';
  for (;;) {
    const page = await unary(ledger, 'ListEntries', { game_id: gameId, page_size: 1000, page_token: token });
    const anchor = (page.entries || []).find((e) => e.event_type === 'GameFinished' && !(e.postings || []).length);
    if (anchor) return Number(anchor.seq);
    if (!page.next_page_token) return 0;
    token = page.next_page_token;
  }
}

// Run as a program; `require` it to reuse the encoding and signing (tests/e2e/test_examples.py
// checks them against the server's over every game's actions).
if (require.main === module) {
  main().then((code) => { process.exitCode = code; }, (err) => {
    console.error(`error: ${err.message}`);
    process.exitCode = 1;
  });
}

module.exports = { canonical, encodeAction, commandBytes, loadTypes };
