// The game's story in words: each event of a WatchGame stream as one line, the same line
// the terminal prints (`boulevard watch`, `make run`). This is a port of
// boulevard.client.table.Table's words and of the games' describers
// (boulevard/games/*/describe.py); tests/browser/test_story.py runs both over every golden
// history and bot-played games of the four games and requires the same lines, so a change
// to one side without the other fails there.
//
// Events are read from their payloads (the codec's canonical JSON). A game without a
// describer, or an event its describer cannot read, is told plainly: its name and its
// simple fields, seats by name.

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

const DESCRIBERS: Record<string, Describer | undefined> = {
  las_vegas: lasVegas,
  lords_of_vegas: lordsOfVegas,
};
