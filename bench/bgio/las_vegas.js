// Las Vegas for boardgame.io 0.50.2, written from Boulevard's rules
// (libs/boulevard/games/las_vegas/rules.py) so that the side-by-side bench (bench/bgio.py)
// compares the same game: the same printed numbers (read from the same las_vegas.json), the
// same deal, payout, tie cancelling, turn order and ranking. Only the base game: the neutral
// white-dice variant (a Boulevard option, off by default) is not written here.
//
// check.js replays random games of this file through Boulevard's rules and compares every
// roll, every set of legal moves and the final scores (bench/bgio_check.py runs both).
//
// Where the two differ by construction: boardgame.io draws its randomness from its seeded
// PRNG inside the server's reducer (the banknote shuffle in setup, a seat's roll when its
// turn begins); Boulevard draws it from its dice service as chance events. The sequence of
// draws (what is rolled, how many dice, when) is the same.
'use strict';

const path = require('path');
const { INVALID_MOVE } = require('boardgame.io/core');

const DATA = require(path.join(
  __dirname, '..', '..', 'libs', 'boulevard', 'games', 'las_vegas', 'las_vegas.json',
));

// Banknote ids 0..53 in ascending value order, as data.py numbers them.
const NOTE_VALUES = Object.entries(DATA.banknotes.counts_by_value)
  .sort(([a], [b]) => Number(a) - Number(b))
  .flatMap(([value, count]) => Array(count).fill(Number(value)));
const CASINOS = DATA.casinos;
const ROUNDS = DATA.rounds;

function sortedNotes(notes) {
  // Stable (as in Python): notes of equal value keep the order they were dealt in.
  return [...notes].sort((a, b) => NOTE_VALUES[b] - NOTE_VALUES[a]);
}

// Fill casinos 1..6 in turn from the top of the stack until each holds at least the refill
// minimum (or the stack is empty).
function deal(stack) {
  const casinos = [];
  let position = 0;
  for (let c = 0; c < CASINOS; c++) {
    const taken = [];
    let sum = 0;
    while (sum < DATA.casino_refill_minimum && position < stack.length) {
      taken.push(stack[position]);
      sum += NOTE_VALUES[stack[position]];
      position++;
    }
    casinos.push(sortedNotes(taken));
  }
  return casinos;
}

function beginRound(G, number, start, dealt) {
  const used = new Set(dealt.flat());
  G.phase = 'playing';
  G.round = number;
  G.startPlayer = start;
  G.current = start;
  G.stack = G.stack.filter((n) => !used.has(n));
  G.casinos = dealt.map((notes) => ({ notes, dice: Array(G.players).fill(0) }));
  G.diceLeft = Array(G.players).fill(DATA.dice_per_player);
  G.roll = null;
}

// Clockwise from `after`, the next seat with dice; `after` itself comes last.
function nextToPlay(G, after) {
  for (let step = 1; step <= G.players; step++) {
    const seat = (after + step) % G.players;
    if (G.diceLeft[seat] > 0) return seat;
  }
  return after;
}

// Tied counts cancel; the rest ranked by dice, most first (ties in order impossible).
function rankDice(dice) {
  const counts = dice.map((n, seat) => [seat, n]).filter(([, n]) => n > 0);
  const multiplicity = {};
  for (const [, n] of counts) multiplicity[n] = (multiplicity[n] || 0) + 1;
  return counts
    .filter(([, n]) => multiplicity[n] === 1)
    .sort((a, b) => b[1] - a[1])
    .map(([seat]) => seat);
}

function money(G) {
  return G.hands.map((hand) => hand.reduce((sum, n) => sum + NOTE_VALUES[n], 0));
}

// Most money first; equal money, more banknotes first; equal on both, a shared place.
function ranking(G) {
  const totals = money(G);
  const seats = [...Array(G.players).keys()].sort(
    (a, b) => totals[b] - totals[a] || G.hands[b].length - G.hands[a].length,
  );
  const groups = [];
  for (const seat of seats) {
    const last = groups[groups.length - 1];
    if (last && totals[last[0]] === totals[seat] && G.hands[last[0]].length === G.hands[seat].length) {
      last.push(seat);
    } else {
      groups.push([seat]);
    }
  }
  return groups;
}

function endRound(G) {
  for (const casino of G.casinos) {
    const ranked = rankDice(casino.dice);
    casino.notes.forEach((note, i) => {
      if (i < ranked.length) G.hands[ranked[i]].push(note);
      else G.stack.push(note); // nobody won it: under the stack
    });
    casino.notes = [];
    casino.dice = Array(G.players).fill(0);
  }
  if (G.round < ROUNDS) {
    beginRound(G, G.round + 1, (G.startPlayer + 1) % G.players, deal(G.stack));
  } else {
    G.phase = 'finished';
    G.roll = null;
    G.result = { money: money(G), banknotes: G.hands.map((h) => h.length), ranking: ranking(G) };
  }
}

// The distinct numbers the seat rolled, ascending: its legal moves (none when not its turn).
function legalNumbers(G, seat) {
  if (G.phase !== 'playing' || G.roll === null || seat !== G.current) return [];
  return [...new Set(G.roll)].sort((a, b) => a - b);
}

function placeDice({ G, playerID, events }, number) {
  const seat = Number(playerID);
  if (!legalNumbers(G, seat).includes(number)) return INVALID_MOVE;
  const own = G.roll.filter((d) => d === number).length;
  G.casinos[number - 1].dice[seat] += own;
  G.diceLeft[seat] -= own;
  G.roll = null;
  G.current = nextToPlay(G, seat);
  if (!G.diceLeft.some((n) => n > 0)) endRound(G);
  events.endTurn();
}

const LasVegas = {
  name: 'las-vegas',
  minPlayers: DATA.min_players,
  maxPlayers: DATA.max_players,
  setup: ({ ctx, random }) => {
    const G = {
      phase: 'setup',
      players: ctx.numPlayers,
      round: 0,
      startPlayer: 0,
      current: 0,
      stack: random.Shuffle([...NOTE_VALUES.keys()]),
      casinos: [],
      hands: Array.from({ length: ctx.numPlayers }, () => []),
      diceLeft: [],
      roll: null,
      result: null,
    };
    beginRound(G, 1, 0, deal(G.stack));
    return G;
  },
  turn: {
    order: { first: ({ G }) => G.current, next: ({ G }) => G.current },
    // The seat's roll: all its dice left, when its turn begins.
    onBegin: ({ G, random }) => {
      if (G.phase === 'playing' && G.roll === null) G.roll = random.Die(DATA.dice_sides, G.diceLeft[G.current]);
    },
  },
  // client: false — the server runs every move (a roll is never guessed by a client), as
  // Boulevard's engine does; the client waits for the server's update.
  moves: { placeDice: { move: placeDice, client: false } },
  endIf: ({ G }) => (G.phase === 'finished' ? G.result : undefined),
};

module.exports = { LasVegas, legalNumbers, money, NOTE_VALUES };
