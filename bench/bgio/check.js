// Plays random Las Vegas games with boardgame.io's own local client (its reducer, its seeded
// PRNG) and prints, one JSON line a game, what bench/bgio_check.py replays through
// Boulevard's rules: the banknote shuffle, then every step's roll, the legal moves and the
// move chosen, and the final scores and ranking.
// Usage: node check.js GAMES [PLAYERS]
'use strict';

const { Client } = require('boardgame.io/client');
const { LasVegas, legalNumbers } = require('./las_vegas');

// A small seeded PRNG for the moves chosen (mulberry32), so a run can be repeated.
function mulberry32(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function playOne(index, players) {
  let shuffle = null;
  const game = {
    ...LasVegas,
    seed: `check-${index}`,
    // The same setup, with its shuffle recorded (the state keeps only what is left of it).
    setup: (context) => {
      const random = {
        ...context.random,
        Shuffle: (items) => (shuffle = context.random.Shuffle(items)),
      };
      return LasVegas.setup({ ...context, random });
    },
  };
  const client = Client({ game, numPlayers: players });
  client.start();
  const pick = mulberry32(index + 1);
  const steps = [];
  for (;;) {
    const { G, ctx } = client.getState();
    if (ctx.gameover) {
      client.stop();
      return { players, shuffle, steps, money: ctx.gameover.money, ranking: ctx.gameover.ranking };
    }
    const seat = Number(ctx.currentPlayer);
    const legal = legalNumbers(G, seat);
    const others = [...Array(players).keys()].filter((s) => s !== seat);
    if (others.some((s) => legalNumbers(G, s).length)) throw new Error('two seats may move');
    const move = legal[Math.floor(pick() * legal.length)];
    steps.push({ seat, roll: G.roll, legal, move });
    client.updatePlayerID(String(seat));
    client.moves.placeDice(move);
    if (client.getState().G === G) throw new Error(`move ${move} of seat ${seat} refused`);
  }
}

const games = Number(process.argv[2] || 200);
const players = Number(process.argv[3] || 4);
for (let i = 0; i < games; i++) process.stdout.write(`${JSON.stringify(playOne(i, players))}\n`);
