// The load client of bench/bgio.py: GAMES tables of 4 seats, each seat its own boardgame.io
// client (socket.io, as a browser's) that sends a random legal move when its update shows
// its turn; a finished game is followed by a new one at the same table. Prints "ready" when
// every seat has its first state, waits for a line on stdin, plays for SECONDS, then prints
// one JSON line: each move's latency (sent until the seat's client holds the server's
// update), games finished, this process's CPU seconds.
// THINK (ms, default 0): the mean time a seat waits before each move, uniform around it (a
// paced load instead of a saturated one).
// Usage: node loadclient.js URL GAMES SECONDS SEED [THINK]
'use strict';

const { Client } = require('boardgame.io/client');
const { SocketIO } = require('boardgame.io/multiplayer');
const { LasVegas, legalNumbers } = require('./las_vegas');

const [url, games, seconds, seed, think = '0'] = process.argv.slice(2);
const THINK_MS = Number(think);
const PLAYERS = 4;

function mulberry32(s) {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = mulberry32(Number(seed));

async function post(path, body) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

const tally = { latencies: [], gamesFinished: 0, open: 0, go: false, wake: [], errors: [] };

// One match through the lobby API (create, then a seat each), the way a lobby page does.
async function newMatch() {
  const { matchID } = await post('/games/las-vegas/create', { numPlayers: PLAYERS });
  const credentials = [];
  for (let seat = 0; seat < PLAYERS; seat++) {
    const joined = await post(`/games/las-vegas/${matchID}/join`, {
      playerID: String(seat),
      playerName: `b${seat}`,
    });
    credentials.push(joined.playerCredentials);
  }
  return { matchID, credentials };
}

// A table: play its match with 4 clients; when it ends, the next one.
async function table() {
  for (;;) {
    const { matchID, credentials } = await newMatch();
    await new Promise((resolve) => {
      let done = 0;
      for (let seat = 0; seat < PLAYERS; seat++) {
        const client = Client({
          game: LasVegas,
          matchID,
          playerID: String(seat),
          credentials: credentials[seat],
          multiplayer: SocketIO({ server: url }),
        });
        let first = true;
        let sentAt = null;
        let actedAt = -1;
        let stopped = false;
        const onState = (state) => {
          if (state === null) return;
          if (first) {
            first = false;
            tally.open++;
          }
          if (sentAt !== null && state._stateID > actedAt) {
            if (tally.go) tally.latencies.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
            sentAt = null;
          }
          if (state.ctx.gameover) {
            if (stopped) return; // stop() notifies the subscribers once more
            stopped = true;
            setImmediate(() => client.stop());
            if (++done === PLAYERS) resolve();
            return;
          }
          const legal = legalNumbers(state.G, seat);
          if (!tally.go || !legal.length || state._stateID <= actedAt) return;
          actedAt = state._stateID;
          const move = legal[Math.floor(pick() * legal.length)];
          const send = () => {
            sentAt = process.hrtime.bigint();
            client.moves.placeDice(move);
          };
          if (THINK_MS > 0) setTimeout(send, THINK_MS * (0.5 + pick()));
          else send();
        };
        client.subscribe(onState);
        client.start();
        // The first move waits for the go: re-offer the state the seat holds when it comes.
        if (!tally.go) tally.wake.push(() => onState(client.getState()));
      }
    });
    tally.gamesFinished++;
  }
}

async function main() {
  const count = Number(games);
  for (let i = 0; i < count; i++) table().catch((err) => tally.errors.push(String(err)));
  const deadline = Date.now() + 180_000;
  while (tally.open < count * PLAYERS) {
    if (tally.errors.length) throw new Error(tally.errors[0]);
    if (Date.now() > deadline) throw new Error(`${tally.open} of ${count * PLAYERS} seats connected`);
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log('ready');
  await new Promise((r) => process.stdin.once('data', r));
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  tally.go = true;
  for (const wake of tally.wake.splice(0)) wake();
  await new Promise((r) => setTimeout(r, Number(seconds) * 1000));
  const used = process.cpuUsage(cpu);
  const finishedGames = tally.gamesFinished;
  const latencies = tally.latencies.slice();
  const result = JSON.stringify({
    latencies,
    games_finished: finishedGames,
    seconds: Number(process.hrtime.bigint() - start) / 1e9,
    cpu: (used.user + used.system) / 1e6,
    errors: tally.errors,
  });
  // Exit once the line is written: a pipe's writes are asynchronous, exit() would cut it.
  process.stdout.write(`${result}\n`, () => process.exit(0));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
