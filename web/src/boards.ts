// Each game's board drawn as SVG from the engine's typed view (GameView), the same view the
// terminal's board is printed from. Text-only parts (money, hands) sit beside it in HTML.

import type { GameView } from "./gen/boulevard/v1/engine_pb";
import { LordsOfVegasColour, LordsOfVegasPhase, type LordsOfVegasView } from "./gen/boulevard/v1/lords_of_vegas_pb";
import type { LasVegasView } from "./gen/boulevard/v1/las_vegas_pb";
import type { LongShotView } from "./gen/boulevard/v1/long_shot_pb";
import type { VegasShowdownView } from "./gen/boulevard/v1/vegas_showdown_pb";

export const SEAT_COLOURS = ["#2f6fdb", "#2e9d4f", "#d23c3c", "#d9a400", "#8e44ad", "#e67e22", "#16a085", "#7f8c8d"];

export function esc(s: unknown): string {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const seatColour = (n: number | undefined) => (n === undefined ? "#999" : SEAT_COLOURS[n % SEAT_COLOURS.length]!);

function svg(w: number, h: number, body: string, label: string): string {
  return `<svg class="board" viewBox="0 0 ${w} ${h}" role="img" aria-label="${esc(label)}" xmlns="http://www.w3.org/2000/svg">${body}</svg>`;
}

function die(x: number, y: number, size: number, value: number | string, colour: string, ink = "#fff"): string {
  return `<rect x="${x}" y="${y}" width="${size}" height="${size}" rx="${size / 5}" fill="${colour}" stroke="#222"/><text x="${x + size / 2}" y="${y + size * 0.7}" text-anchor="middle" font-size="${size * 0.6}" fill="${ink}">${esc(value)}</text>`;
}

// Lords of Vegas: blocks A, C, E left of the Strip and B, D, F right of it, lots in board
// order A1…F9 (libs/boulevard/games/lords_of_vegas/board.json), three lots a row.
const LOV_BLOCKS: [string, number, number, number][] = [
  // block, lots, column (0 left, 1 right), first row
  ["A", 6, 0, 0], ["B", 6, 1, 0], ["C", 12, 0, 3], ["D", 9, 1, 3], ["E", 6, 0, 8], ["F", 9, 1, 8],
];
const TILE: Record<number, string> = {
  [LordsOfVegasColour.AQUA]: "#37c6c0",
  [LordsOfVegasColour.BROWN]: "#8b5a2b",
  [LordsOfVegasColour.GOLD]: "#e0b12b",
  [LordsOfVegasColour.PURPLE]: "#8e44ad",
  [LordsOfVegasColour.SILVER]: "#a8b0b8",
};

function lordsOfVegas(v: LordsOfVegasView): string {
  const cell = 44;
  let body = `<rect x="${3 * cell + 8}" y="0" width="24" height="${11 * cell}" fill="#555"/><text x="${3 * cell + 20}" y="${5.5 * cell}" fill="#fff" font-size="14" text-anchor="middle" transform="rotate(90 ${3 * cell + 20} ${5.5 * cell})">THE STRIP</text>`;
  let index = 0;
  for (const [block, lots, column, row0] of LOV_BLOCKS) {
    for (let i = 0; i < lots; i++, index++) {
      const space = v.spaces[index];
      const x = column * (3 * cell + 40) + (i % 3) * cell;
      const y = (row0 + Math.floor(i / 3)) * cell;
      const fill = space?.tile !== undefined ? (TILE[space.tile] ?? "#ccc") : "#f4efe1";
      body += `<g data-lot="${block}${i + 1}"><rect x="${x + 1}" y="${y + 1}" width="${cell - 2}" height="${cell - 2}" fill="${fill}" stroke="#333"/>`;
      body += `<text x="${x + 4}" y="${y + 12}" font-size="10">${block}${i + 1}</text>`;
      if (space?.marker !== undefined) body += `<circle cx="${x + cell - 10}" cy="${y + 10}" r="6" fill="${seatColour(space.marker)}" stroke="#fff"/>`;
      if (space?.owner !== undefined) body += die(x + 12, y + 16, 22, space.die, seatColour(space.owner));
      body += "</g>";
    }
  }
  return svg(6 * cell + 40, 11 * cell, body, `Lords of Vegas board, ${v.cardsLeft} cards left`);
}

function lasVegas(v: LasVegasView): string {
  const w = 110;
  let body = "";
  v.casinos.forEach((c, i) => {
    const x = i * w;
    body += `<g data-casino="${c.number}"><rect x="${x + 2}" y="2" width="${w - 4}" height="236" rx="8" fill="#1f6b3a" stroke="#0d3"/>`;
    body += die(x + w / 2 - 16, 10, 32, c.number, "#fff", "#000");
    c.notes.forEach((n, k) => {
      body += `<rect x="${x + 10}" y="${52 + k * 22}" width="${w - 20}" height="18" fill="#e8f5d0" stroke="#333"/><text x="${x + w / 2}" y="${66 + k * 22}" text-anchor="middle" font-size="12">$${Number(n).toLocaleString("en-US")}</text>`;
    });
    let y = 150;
    c.dice.forEach((count, seat) => {
      if (count > 0) {
        body += die(x + 10, y, 20, count, seatColour(seat));
        y += 24;
      }
    });
    if (c.white > 0) body += die(x + 10, y, 20, c.white, "#eee", "#000");
    body += "</g>";
  });
  if (v.roll) {
    const dice = [...v.roll.own.map((d) => [d, seatColour(v.current)] as const), ...v.roll.white.map((d) => [d, "#eee"] as const)];
    dice.forEach(([d, colour], k) => (body += die(k * 34 + 4, 250, 30, d, colour, colour === "#eee" ? "#000" : "#fff")));
  }
  return svg(6 * w, 290, body, `Las Vegas round ${v.round} of ${v.rounds}`);
}

function longShot(v: LongShotView): string {
  const len = Math.max(v.trackLength, 1);
  const step = 560 / len;
  let body = `<rect x="40" y="0" width="${(v.noBetsFrom) * step}" height="${v.horses.length * 26 + 4}" fill="#e9f3e4"/><rect x="${40 + v.noBetsFrom * step}" y="0" width="${(len - v.noBetsFrom) * step}" height="${v.horses.length * 26 + 4}" fill="#f6e0e0"/>`;
  v.horses.forEach((h, i) => {
    const y = i * 26 + 4;
    body += `<g data-horse="${h.number}"><text x="4" y="${y + 16}" font-size="12">${h.number}</text><line x1="40" y1="${y + 11}" x2="600" y2="${y + 11}" stroke="#bbb"/>`;
    body += `<circle cx="${40 + h.position * step}" cy="${y + 11}" r="10" fill="${seatColour(h.owner)}" stroke="#222"/><text x="${40 + h.position * step}" y="${y + 15}" text-anchor="middle" font-size="11" fill="#fff">${h.number}</text>`;
    if (h.finished !== undefined) body += `<text x="610" y="${y + 16}" font-size="12">#${h.finished}</text>`;
    body += "</g>";
  });
  const y = v.horses.length * 26 + 10;
  if (v.horseDie !== undefined) body += die(40, y, 28, v.horseDie, "#333");
  if (v.moveDie !== undefined) body += die(76, y, 28, v.moveDie, "#b03030");
  return svg(640, y + 36, body, `Long Shot turn ${v.turn}`);
}

function vegasShowdown(v: VegasShowdownView): string {
  const [cols, rows] = v.sheet === "7x5" ? [7, 5] : [8, 5];
  const cell = 22;
  const sheetW = cols * cell + 16;
  let body = "";
  v.seats.forEach((s, i) => {
    const x0 = i * sheetW;
    body += `<g data-sheet="${s.seat}"><text x="${x0}" y="12" font-size="12" fill="${seatColour(s.seat)}">seat ${s.seat}: fame ${s.fame}</text>`;
    for (let c = 0; c < cols; c++) for (let r = 0; r < rows; r++) body += `<rect x="${x0 + c * cell}" y="${18 + r * cell}" width="${cell}" height="${cell}" fill="#faf6ea" stroke="#ccc"/>`;
    for (const t of s.sheet) {
      body += `<rect x="${x0 + t.col * cell + 1}" y="${18 + t.row * cell + 1}" width="${cell - 2}" height="${cell - 2}" fill="${seatColour(s.seat)}" opacity="0.8"><title>${esc(t.name)}</title></rect><text x="${x0 + t.col * cell + 3}" y="${18 + t.row * cell + 14}" font-size="8" fill="#fff">${esc(t.name.slice(0, 3))}</text>`;
    }
    body += "</g>";
  });
  let y = 18 + rows * cell + 16;
  for (const t of v.tracks) {
    body += `<text x="0" y="${y}" font-size="12">${esc(t.name)}: ${esc(t.tileName || "—")} · min $${t.minimum}${t.bidder !== undefined ? ` · bid $${t.bid} by seat ${t.bidder}` : ""}</text>`;
    y += 16;
  }
  return svg(Math.max(v.seats.length * sheetW, 420), y, body, `Vegas Showdown turn ${v.turn}`);
}

/** The board of `view`'s game as an SVG string ("" for a view of no known game). */
export function board(view: GameView | undefined): string {
  const g = view?.game;
  switch (g?.case) {
    case "lordsOfVegas":
      return lordsOfVegas(g.value);
    case "lasVegas":
      return lasVegas(g.value);
    case "longShot":
      return longShot(g.value);
    case "vegasShowdown":
      return vegasShowdown(g.value);
    default:
      return "";
  }
}

/** Money, hand and status lines under the board, per game. */
export function status(view: GameView | undefined, players: string[]): string {
  const g = view?.game;
  const name = (n: number) => esc(players[n] ?? `seat ${n}`);
  const rows = (money: readonly bigint[], extra: (n: number) => string) =>
    money.map((m, n) => `<li style="border-left:6px solid ${seatColour(n)}">${name(n)} (seat ${n}): $${Number(m).toLocaleString("en-US")}${extra(n)}</li>`).join("");
  switch (g?.case) {
    case "lordsOfVegas": {
      const v = g.value;
      return `<p>phase ${esc((LordsOfVegasPhase[v.phase] ?? "").toLowerCase().replace(/_/g, " "))} · ${v.cardsLeft} cards left · seat ${v.current} to play</p><ul class="money">${rows(v.cash, (n) => ` · ${v.points[n] ?? 0} pts`)}</ul>`;
    }
    case "lasVegas": {
      const v = g.value;
      return `<p>round ${v.round}/${v.rounds}${v.current !== undefined ? ` · seat ${v.current} to play` : ""}</p><ul class="money">${rows(v.money, (n) => ` · dice left ${v.diceLeft[n] ?? 0}${v.whiteLeft[n] ? ` + ${v.whiteLeft[n]} white` : ""} · notes ${v.banknotes[n]?.values.map((x) => "$" + x).join(" ") || "none"}`)}</ul>`;
    }
    case "longShot": {
      const v = g.value;
      const hand = v.hand.map((c) => `<li>${esc(c.title)}</li>`).join("");
      return `<p>turn ${v.turn}${v.current !== undefined ? ` · seat ${v.current} to play` : ""} · deck ${v.deckSize}</p><ul class="money">${rows(v.money, (n) => ` · ${v.handSizes[n] ?? 0} cards · ${v.rerolls[n] ?? 0} rerolls`)}</ul>${hand ? `<p>your hand:</p><ul class="hand">${hand}</ul>` : ""}`;
    }
    case "vegasShowdown": {
      const v = g.value;
      return `<p>turn ${v.turn}${v.current !== undefined ? ` · seat ${v.current} to act` : ""}</p><ul class="money">${rows(v.seats.map((s) => s.cash), (n) => { const s = v.seats[n]!; return ` · fame ${s.fame} · population ${s.population} · revenue ${s.revenue}`; })}</ul>`;
    }
    default:
      return "";
  }
}
