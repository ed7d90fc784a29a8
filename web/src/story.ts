// The game's story in words: each event of a WatchGame stream as one line, the same line
// the terminal prints (`boulevard watch`, `make run`). This is a port of
// boulevard.client.table.Table's words and of the games' describers
// (boulevard/games/*/describe.py); tests/browser/test_story.py runs both over every golden
// history and bot-played games of the four games and requires the same lines, so a change
// to one side without the other fails there.
//
// Events are read from their payloads (the codec's canonical JSON). An event its game's
// describer cannot read (a platform event, a payload it does not know) is told plainly: its
// name and its simple fields, seats by name.

import type { EventEnvelope } from "./gen/boulevard/v1/events_pb";

type Json = Record<string, unknown>;
// undefined: not an event of this game (a platform event the describer does not know).
type Describer = (type: string, e: Json, names: readonly string[]) => string | undefined;

/** "player-0 (seat 0)": how a seat is called on screen (Table's seat_names). */
export function seatNames(playerIds: readonly string[]): string[] {
  return playerIds.map((pid, i) => `${pid} (seat ${i})`);
}

/** The envelope's payload as JSON ({} when it is not a JSON object). */
export function payloadOf(env: EventEnvelope): Json {
  try {
    const data: unknown = JSON.parse(new TextDecoder().decode(env.payload));
    return data !== null && typeof data === "object" && !Array.isArray(data) ? (data as Json) : {};
  } catch {
    return {};
  }
}

/** The names a GameCreated gives the seats; [] for any other event. */
export function namesOf(env: EventEnvelope): string[] {
  if (env.type !== "GameCreated") return [];
  const seats = (payloadOf(env).seats ?? []) as { player_id?: string }[];
  return seatNames(seats.map((s) => s.player_id ?? "?"));
}

/** One event in words ("" when it says nothing to a person). `names` are the seats' names
 * (from namesOf the game's GameCreated; [] before it). */
export function storyLine(game: string, env: EventEnvelope, names: readonly string[]): string {
  const data = payloadOf(env);
  switch (env.type) {
    case "GameCreated": {
      const created = namesOf(env);
      const commitment = String(data.seed_commitment ?? "");
      return `game created for ${created.join(", ")}; dice commitment ${commitment.slice(0, 16)}…`;
    }
    case "GameFinished":
      return "game over" + (data.reason ? ` (${String(data.reason)})` : "");
    case "ClientSeedRevealed": {
      const seat = typeof data.seat === "number" ? data.seat : -1;
      const who = seat >= 0 && seat < names.length ? names[seat] : `seat ${seat}`;
      return `${who} reveals the client seed committed to before the dice commitment`;
    }
    case "ClientSeedsFixed": {
      const missing = (data.missing_seats ?? []) as number[];
      const late = missing.length ? `; seats [${missing.join(", ")}] did not reveal and play with an empty seed` : "";
      return `client seeds fixed: the dice may roll${late}`;
    }
    case "CommandAccepted":
      return ""; // the signed record of the move (for auditors); its events say it
    case "ChanceResolved": {
      const values = (data.values ?? []) as number[];
      const nonce = data.nonce ?? "?";
      const purpose = String(data.purpose ?? "").replace(/_/g, " ");
      if (data.kind === "shuffle") {
        const hidden = values.length ? "" : ", order hidden until the game ends";
        return `dice service shuffles the ${purpose} (nonce ${String(nonce)}${hidden})`;
      }
      return `dice service rolls ${values.join(" ")} for ${purpose} (nonce ${String(nonce)})`;
    }
  }
  const words = gameWords(game, env.type, data, names);
  const money = moneyLine(env, names);
  return words && money ? `${words}  [${money}]` : words;
}

function gameWords(game: string, type: string, data: Json, names: readonly string[]): string {
  const describe = DESCRIBERS[game];
  if (describe === undefined || names.length === 0) return plainWords(type, data, names);
  try {
    return describe(type, data, names) ?? plainWords(type, data, names);
  } catch {
    return plainWords(type, data, names); // an event this page cannot read: say what it can
  }
}

/** The money an event moves, "alice → bank $12, …" (the envelope's transfers). */
function moneyLine(env: EventEnvelope, names: readonly string[]): string {
  const who = (account: string): string => {
    if (!account.startsWith("seat:")) return account;
    const seat = Number(account.slice("seat:".length));
    return seat < names.length ? names[seat]!.split(" ")[0]! : account;
  };
  return env.transfers.map((t) => `${who(t.source)} → ${who(t.target)} $${t.amount}`).join(", ");
}

// Fields that hold a seat: whose turn follows (Long Shot), who was outbid and who holds the
// first-player button (Vegas Showdown).
const SEAT_FIELDS = new Set(["seat", "next", "outbid", "button"]);

/** For a game without a describer: the event's name in words and its simple fields. */
function plainWords(type: string, data: Json, names: readonly string[]): string {
  const words = type.replace(/(?<!^)(?=[A-Z])/g, " ").toLowerCase();
  const fields: string[] = [];
  for (const [name, value] of Object.entries(data)) {
    if (name === "type" || name === "transfers" || value === null || typeof value === "object") continue;
    let shown = scalar(value);
    if (SEAT_FIELDS.has(name) && Number.isInteger(value) && (value as number) >= 0 && (value as number) < names.length) {
      shown = names[value as number]!;
    }
    fields.push(`${name.replace(/_/g, " ")} ${shown}`);
  }
  return fields.length ? `${words}: ${fields.join(", ")}` : words;
}

/** A JSON scalar as Python's str() writes it. */
function scalar(v: unknown): string {
  if (typeof v === "boolean") return v ? "True" : "False";
  return String(v);
}

/** names[i], or an error like Python's IndexError (the caller falls back to plain words). */
function at(names: readonly string[], i: unknown): string {
  const n = i as number;
  const name = Number.isInteger(n) ? names[n < 0 ? names.length + n : n] : undefined;
  if (name === undefined) throw new RangeError(`no seat ${String(i)}`);
  return name;
}

/** 80000 → "80,000" (Python's format spec ","). */
function thousands(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

// ---- Las Vegas: boulevard/games/las_vegas/describe.py -----------------------------------

const lasVegas: Describer = (type, e, names) => {
  switch (type) {
    case "GameStarted": {
      const white = e.white_dice ? " with white dice" : "";
      return `${String(e.players)} players${white}; ${at(names, e.start_player)} starts`;
    }
    case "RoundStarted":
      return `round ${String(e.round)} begins; ${at(names, e.start_player)} starts`;
    case "DicePlaced": {
      const white = e.white ? ` and ${String(e.white)} white` : "";
      return `${at(names, e.seat)} places ${String(e.own)} dice${white} on casino ${String(e.casino)}`;
    }
    case "CasinoPaidOut": {
      const awards = e.awards as { seat: number; value: number }[];
      if (!awards.length) return `casino ${String(e.casino)} pays nobody`;
      const paid = awards.map((a) => `${at(names, a.seat)} $${thousands(a.value)}`).join(", ");
      return `casino ${String(e.casino)} pays ${paid}`;
    }
    case "GameEnded":
      return "the fourth round is over";
  }
  return undefined;
};

// ---- Lords of Vegas: boulevard/games/lords_of_vegas/describe.py -------------------------

interface Offer {
  proposer: number;
  recipient: number;
  give_money: number;
  give_lots: string[];
  give_dice: string[];
  take_money: number;
  take_lots: string[];
  take_dice: string[];
  action: { kind: string; lot: string } | null;
}

function offerWords(offer: Offer, names: readonly string[]): string {
  const side = (money: number, lots: string[], dice: string[]): string => {
    const parts = money ? [`$${money}`] : [];
    parts.push(...lots.map((lot) => `lot ${lot}`), ...dice.map((lot) => `die on ${lot}`));
    return parts.join(", ") || "nothing";
  };
  const give = side(offer.give_money, offer.give_lots, offer.give_dice);
  const take = side(offer.take_money, offer.take_lots, offer.take_dice);
  const action = offer.action ? ` and ${offer.action.kind} on ${offer.action.lot}` : "";
  return `${at(names, offer.proposer)} gives ${give} to ${at(names, offer.recipient)} for ${take}${action}`;
}

const lordsOfVegas: Describer = (type, e, names) => {
  const who = (): string => at(names, e.seat);
  switch (type) {
    case "GameStarted":
      return `${String(e.players)} players; ${at(names, e.banker)} keeps the bank`;
    case "StartingCardsDealt": {
      const hands = (e.hands as string[][]).map((hand, seat) => `${at(names, seat)} gets lots ${hand.join(", ")}`).join("; ");
      return `starting lots dealt: ${hands}`;
    }
    case "CardDrawn": {
      if (e.card === "END") return `${who()} draws the End of Game card: final payout`;
      const payouts = (e.payouts ?? []) as { colour: string; boss: number | null; points: number; money: number }[];
      const paid = payouts
        .filter((p) => p.boss !== null)
        .map((p) => `${p.colour} casino pays ${at(names, p.boss)} ${p.points} pts $${p.money}`)
        .join(", ");
      return `${who()} draws lot ${String(e.card)}; ${String(e.pays)} pays` + (paid ? `: ${paid}` : "");
    }
    case "CasinoBuilt":
      return `${who()} builds a ${String(e.colour)} casino on ${String(e.lot)} (die ${String(e.die)})`;
    case "CasinoSprawled":
      return `${who()} sprawls the ${String(e.colour)} casino onto ${String(e.lot)} (die ${String(e.die)})`;
    case "CasinoRemodelled":
      return `${who()} remodels ${(e.lots as string[]).join(", ")} from ${String(e.old_colour)} to ${String(e.colour)}`;
    case "CasinoReorganized":
      return `${who()} reorganizes the casino on ${(e.lots as string[]).join(", ")}`;
    case "ReorganizedDiceAssigned": {
      const dice = (e.placements as [string, number][]).map(([lot, value]) => `${value} on ${lot}`).join(", ");
      return `${who()} places the rerolled dice: ${dice}`;
    }
    case "GambleOffered":
      return `${who()} gambles $${String(e.amount)} at ${at(names, e.boss)}'s casino on ${String(e.lot)}`;
    case "LayOffDecided":
      return `${who()} ${e.lay_off ? "lays the bet off to the bank" : "covers the bet"}`;
    case "GambleSettled": {
      const transfers = (e.transfers ?? []) as { target: string }[];
      const won = transfers.some((t) => t.target === `seat:${String(e.seat)}`);
      return `${who()} rolls ${String(e.roll)} and ${won ? "wins" : "loses"} $${String(e.amount)}`;
    }
    case "TradeProposed":
      return `trade proposed: ${offerWords(e.offer as Offer, names)}`;
    case "TradeAccepted":
      return `trade done: ${offerWords(e.offer as Offer, names)}`;
    case "TradeRejected":
      return `${at(names, (e.offer as Offer).recipient)} turns the trade down`;
    case "TurnEnded":
      return `${who()} ends the turn; ${at(names, e.next_seat)} is next`;
  }
  return undefined;
};

// ---- Long Shot: boulevard/games/long_shot/describe.py -----------------------------------

/** 1 → "1st", 2 → "2nd", 3 → "3rd", 4 → "4th", 11 → "11th". */
function ordinal(n: number): string {
  const suffix = n % 100 >= 10 && n % 100 <= 20 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${suffix}`;
}

const longShot: Describer = (type, e, names) => {
  const who = (): string => at(names, e.seat);
  switch (type) {
    case "GameStarted": {
      const transfers = e.transfers as { amount: number }[];
      const each = transfers.length ? `; each gets $${transfers[0]!.amount}` : "";
      return `${String(e.players)} players${each}`;
    }
    case "FeatureUsed":
      return `${who()} collects $${String(e.amount)} from horse ${String(e.horse)}`;
    case "RerollUsed":
      return `${who()} re-rolls the ${String(e.die)} die`;
    case "HorseMoved": {
      const spaces = e.spaces as number;
      if (spaces < 0) return `horse ${String(e.horse)} falls back ${-spaces} to ${String(e.position)}`;
      return `horse ${String(e.horse)} runs ${spaces} to ${String(e.position)}`;
    }
    case "HorseFinished":
      return `horse ${String(e.horse)} crosses the line ${ordinal(e.place as number)}`;
    case "ZeroRolled": {
      const owner = e.victim === null || e.victim === undefined ? "nobody" : at(names, e.victim);
      return `${who()} rolls a 0 for horse ${String(e.horse)}: no horse moves (it belongs to ${owner})`;
    }
    case "RollResolved":
      return `${who()} is done rolling`;
    case "CardDrawn":
      return `${who()} draws a card`;
    case "CardPlayed": {
      const horse = e.horse === null || e.horse === undefined ? "" : ` on horse ${String(e.horse)}`;
      const target = e.target === null || e.target === undefined ? "" : ` against ${at(names, e.target)}`;
      return `${who()} plays card ${String(e.card)}${horse}${target}`;
    }
    case "MoneyTaken":
      return `${who()} takes $${String(e.amount)} from the bank`;
    case "MoneyStolen":
      return `${who()} takes $${String(e.amount)} from ${at(names, e.victim)}`;
    case "StealStarted":
      return `${who()} takes a random card from ${at(names, e.victim)}`;
    case "HorseBought":
      return `${who()} buys horse ${String(e.horse)} for $${String(e.price)}`;
    case "BetPlaced":
      return `${who()} bets $${String(e.amount)} on horse ${String(e.horse)}${e.free ? " (a free bet)" : ""}`;
    case "CardsDiscarded":
      return `${who()} discards cards ${(e.cards as number[]).join(", ")}`;
    case "Passed":
      return `${who()} passes`;
    case "TurnEnded":
      return `${who()} ends the turn; ${at(names, e.next)} is next`;
    case "RaceEnded":
      return `the race is over: ${(e.finish as number[]).map((horse, i) => `horse ${horse} ${ordinal(i + 1)}`).join(", ")}`;
  }
  return undefined;
};

// ---- Vegas Showdown: boulevard/games/vegas_showdown/describe.py -------------------------

interface Placement {
  tile: number;
  col: number;
  row: number;
  rotation: number;
}

const track = (name: unknown): string => String(name).replace(/_/g, " ");
const placed = (p: Placement): string => `tile ${p.tile} at column ${p.col}, row ${p.row}, turned ${p.rotation}`;

function fameWords(fame: number[], names: readonly string[]): string {
  const won = fame
    .map((f, seat) => [f, seat] as const)
    .filter(([f]) => f)
    .map(([f, seat]) => `${at(names, seat)} +${f}`)
    .join(", ");
  return won ? `; fame ${won}` : "";
}

const vegasShowdown: Describer = (type, e, names) => {
  const who = (): string => at(names, e.seat);
  switch (type) {
    case "GameStarted":
      return `${String(e.players)} players on ${String(e.sheet)} sheets`;
    case "PricesLowered": {
      const gone = (e.removed as number[]).join(", ");
      return "premier prices go down" + (gone ? `; tiles ${gone} leave the game` : "");
    }
    case "EventCardDrawn": {
      const later = e.done ? "" : " (it waits until it can be carried out)";
      return `event card ${track(e.card)}${later}${fameWords(e.fame as number[], names)}`;
    }
    case "EventCardDone":
      return `event card ${track(e.card)} is carried out${fameWords(e.fame as number[], names)}`;
    case "TileFlipped":
      return `tile ${String(e.tile)} comes up on ${track(e.track)}, minimum bid $${String(e.minimum)}`;
    case "IncomeCollected":
      return "income is paid";
    case "BidPlaced": {
      const outbid = e.outbid === null || e.outbid === undefined ? "" : `, outbidding ${at(names, e.outbid)}`;
      return `${who()} bids $${String(e.amount)} on ${track(e.track)}${outbid}`;
    }
    case "Renovated": {
      const parts = [...(e.removed as number[]).map((t) => `removes tile ${t}`), ...(e.placed as Placement[]).map((p) => `places ${placed(p)}`)];
      return `${who()} renovates` + (parts.length ? `: ${parts.join(", ")}` : ", changing nothing");
    }
    case "RenovationStaged": {
      if (e.removed !== null && e.removed !== undefined) return `${who()} renovating: takes tile ${String(e.removed)} off`;
      if (!e.placed) throw new Error("a renovation step with nothing in it");
      return `${who()} renovating: places ${placed(e.placed as Placement)}`;
    }
    case "RenovationCancelled":
      return `${who()} drops the renovation`;
    case "PublicityTaken": {
      const p = e.placed as Placement | null | undefined;
      return `${who()} takes publicity, fame +${String(e.fame)}${p ? ` and places ${placed(p)}` : ""}`;
    }
    case "TileBought":
      return `${who()} buys tile ${String(e.tile)} of ${track(e.track)} for $${String(e.price)}`;
    case "TilePlaced": {
      const p = e.placement as Placement | null | undefined;
      return p ? `${who()} places ${placed(p)}` : `${who()} places no tile`;
    }
    case "TurnEnded":
      return `turn ${String(e.turn)} ends; ${at(names, e.button)} has the button`;
    case "GameEnded": {
      const scores = (e.scores as { seat: number; total: number }[]).map((s) => `${at(names, s.seat)} ${s.total}`).join(", ");
      return `the game ends (${track(e.reason)}): fame ${scores}`;
    }
  }
  return undefined;
};

const DESCRIBERS: Record<string, Describer | undefined> = {
  las_vegas: lasVegas,
  long_shot: longShot,
  lords_of_vegas: lordsOfVegas,
  vegas_showdown: vegasShowdown,
};
