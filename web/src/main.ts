// Boulevard in a browser: the lobby (log in, queue through matchmaking with bot fill), the
// table (play with keys and seeds kept here, or watch), the replay of a finished game and
// the audit done in this page. Pages are hash routes, so the gateway serves one file:
//   #/                 the lobby             #/game/<id>    play (your seat) or watch
//   #/replay/<id>      a finished game, move by move   #/audit/<id>   the in-browser audit
// `#token=<jwt>` (what `boulevard login <name> --web` opens) logs in and goes to the lobby.

import { ConnectError, Code } from "@connectrpc/connect";
import { toBinary } from "@bufbuild/protobuf";
import { ActionSchema, GameStatus, type Action, type GameView, type WatchGameResponse } from "./gen/boulevard/v1/engine_pb";
import { TicketStatus } from "./gen/boulevard/v1/matchmaking_pb";
import type { EventEnvelope } from "./gen/boulevard/v1/events_pb";
import { hex } from "./audit/bytes";
import { seedCommitment } from "./audit/fairness";
import { commandSigningBytes } from "./audit/signing";
import { fetchEvidence } from "./audit/evidence";
import { verifyGame, type Verdict } from "./audit/verify";
import { board, esc, status as statusLines, SEAT_COLOURS } from "./boards";
import { actionLabel } from "./describe";
import { namesOf, storyLine } from "./story";
import { dice, engine, ledger, matchmaking, playerOf, setToken, token } from "./rpc";
import { allSeats, newSeat, retireKey, saveSeat, seatFor, sign, type Seat } from "./seats";

// The registry's games and their table sizes (tests/browser/test_build.py checks them
// against boulevard.games.REGISTRY).
export const GAMES: [string, string, number, number][] = [
  // registry name, title, fewest seats, most seats
  ["las_vegas", "Las Vegas", 2, 5],
  ["long_shot", "Long Shot", 3, 8],
  ["lords_of_vegas", "Lords of Vegas", 2, 4],
  ["vegas_showdown", "Vegas Showdown", 3, 5],
];
const TITLE = new Map(GAMES.map(([n, t]) => [n, t]));

const app = document.getElementById("app") as HTMLElement;
let leave: (() => void) | undefined; // stops the current page's streams

/** Set an element's HTML if the page still shows it (a stream's answer may come after the
 * reader moved to another page). */
function setHtml(id: string, html: string): void {
  const el = document.getElementById(id);
  if (el) el.innerHTML = html;
}

function randomId(): string {
  return hex(crypto.getRandomValues(new Uint8Array(16)));
}

function errorText(err: unknown): string {
  if (err instanceof ConnectError) return `${Code[err.code]}: ${err.rawMessage}`;
  return String(err);
}

function decodePayload(env: EventEnvelope): Record<string, unknown> {
  try {
    return JSON.parse(new TextDecoder().decode(env.payload)) as Record<string, unknown>;
  } catch {
    return {};
  }
}

// ---- the lobby ----------------------------------------------------------------------------

async function lobby(): Promise<void> {
  const jwt = token();
  if (!jwt) {
    app.innerHTML = `<h1>Boulevard</h1>
      <section class="card"><h2>Log in</h2>
      <p>Run <code>boulevard login &lt;name&gt; --web</code> on the platform's machine and open the link it prints,
      or paste a token from <code>boulevard login &lt;name&gt;</code>:</p>
      <form id="login"><label>token <input id="token" name="token" autocomplete="off" required></label>
      <button type="submit">Log in</button></form></section>
      <section class="card"><h2>Watch or audit a game</h2>${gameIdForm()}</section>`;
    document.getElementById("login")!.addEventListener("submit", (e) => {
      e.preventDefault();
      setToken((document.getElementById("token") as HTMLInputElement).value.trim());
      void route();
    });
    bindGameIdForm();
    return;
  }
  const options = GAMES.map(([n, t]) => `<option value="${n}">${t}</option>`).join("");
  app.innerHTML = `<h1>Boulevard</h1>
    <p class="who">logged in as <b id="player">${esc(playerOf(jwt) || "?")}</b> · <a href="#/" id="logout">log out</a></p>
    <section class="card"><h2>Play</h2>
    <form id="queue-form">
      <label>game <select id="game">${options}</select></label>
      <label>seats <select id="seats"></select></label>
      <label>bots fill empty seats after <input id="bot-fill" type="number" min="0" max="600" value="1" size="4"> s</label>
      <button type="submit" id="queue">Queue</button>
    </form><p id="ticket" aria-live="polite"></p></section>
    <section class="card"><h2>Your games</h2><ul id="mine"></ul></section>
    <section class="card"><h2>Games on this platform</h2><ul id="games"><li>loading…</li></ul>${gameIdForm()}</section>`;
  document.getElementById("logout")!.addEventListener("click", () => setToken(""));
  const game = document.getElementById("game") as HTMLSelectElement;
  const seats = document.getElementById("seats") as HTMLSelectElement;
  const fillSeats = () => {
    const [, , lo, hi] = GAMES.find(([n]) => n === game.value)!;
    seats.innerHTML = Array.from({ length: hi - lo + 1 }, (_, i) => `<option>${lo + i}</option>`).join("");
  };
  game.addEventListener("change", fillSeats);
  fillSeats();
  document.getElementById("queue-form")!.addEventListener("submit", (e) => {
    e.preventDefault();
    void queue(game.value, Number(seats.value), Number((document.getElementById("bot-fill") as HTMLInputElement).value));
  });
  bindGameIdForm();
  const mine = (await allSeats()).filter((s) => s.gameId).reverse();
  setHtml("mine", mine.map((s) => `<li>${gameLinks(s.gameId)} · seat ${s.seat}</li>`).join("") || "<li>none yet</li>");
  try {
    const [active, finished] = await Promise.all([
      engine.listGames({ status: GameStatus.ACTIVE, pageSize: 20 }),
      engine.listGames({ status: GameStatus.FINISHED, pageSize: 20 }),
    ]);
    const items = [...active.games, ...finished.games]
      .map((g) => `<li>${esc(TITLE.get(g.game) ?? g.game)} ${g.status === GameStatus.FINISHED ? "finished" : "in play"}, v${g.version}: ${gameLinks(g.gameId)}</li>`)
      .join("");
    setHtml("games", items || "<li>none yet</li>");
  } catch (err) {
    setHtml("games", `<li class="error">${esc(errorText(err))}</li>`);
  }
}

function gameLinks(id: string): string {
  const g = encodeURIComponent(id);
  return `<code>${esc(id)}</code> <a href="#/game/${g}">table</a> · <a href="#/replay/${g}">replay</a> · <a href="#/audit/${g}">audit</a>`;
}

function gameIdForm(): string {
  return `<form class="game-id"><label>game id <input name="id" required autocomplete="off"></label>
    <button name="to" value="game">Watch</button><button name="to" value="replay">Replay</button><button name="to" value="audit">Audit</button></form>`;
}

function bindGameIdForm(): void {
  for (const form of document.querySelectorAll<HTMLFormElement>("form.game-id")) {
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const to = ((e as SubmitEvent).submitter as HTMLButtonElement | null)?.value ?? "game";
      const id = (form.elements.namedItem("id") as HTMLInputElement).value.trim();
      location.hash = `#/${to}/${encodeURIComponent(id)}`;
    });
  }
}

/** Queue: make the seat's key and seed here, put only the public key and the seed's
 * commitment on the ticket, and wait for the seat. */
async function queue(game: string, seats: number, botFill: number): Promise<void> {
  const out = document.getElementById("ticket")!;
  const button = document.getElementById("queue") as HTMLButtonElement;
  button.disabled = true;
  try {
    const seat = await newSeat();
    const { ticket } = await matchmaking.createTicket({
      requestId: randomId(),
      game,
      minSeats: seats,
      maxSeats: seats,
      botFillAfterSeconds: botFill,
      clientSeedCommitment: await seedCommitment(seat.clientSeed),
      publicKey: seat.publicKey,
    });
    seat.ticketId = ticket!.ticketId;
    await saveSeat(seat);
    out.textContent = `ticket ${seat.ticketId}: waiting for ${seats - 1} more (bots after ${botFill} s)…`;
    const abort = new AbortController();
    leave = () => abort.abort();
    for await (const r of matchmaking.watchTicket({ ticketId: seat.ticketId }, { signal: abort.signal })) {
      const t = r.ticket!;
      out.textContent = `ticket ${t.ticketId}: ${TicketStatus[t.status].toLowerCase()} ${t.statusReason}`;
      if (t.status === TicketStatus.ASSIGNED) {
        await saveSeat({ ...seat, gameId: t.gameId, seat: t.seat, playerToken: t.playerToken });
        location.hash = `#/game/${encodeURIComponent(t.gameId)}`;
        return;
      }
      if (t.status === TicketStatus.CANCELLED || t.status === TicketStatus.EXPIRED) break;
    }
  } catch (err) {
    out.innerHTML = `<span class="error">${esc(errorText(err))}</span>`;
  }
  button.disabled = false;
}

// ---- the table ----------------------------------------------------------------------------

interface Table {
  gameId: string;
  seat?: Seat;
  players: string[];
  names: string[]; // the seats as the story calls them (src/story.ts)
  version: bigint;
  view?: GameView;
  toAct: number[];
  legal: Action[];
  legalAt: bigint; // the version `legal` was listed at
  finished: boolean;
  busy: boolean;
  tokenExpiresMs: number; // when the seat's token expires, as RenewPlayerToken said (0: not known)
}

async function table(gameId: string): Promise<void> {
  const seat = await seatFor(gameId);
  const t: Table = { gameId, seat, players: [], names: [], version: 0n, toAct: [], legal: [], legalAt: 0n, finished: false, busy: false, tokenExpiresMs: 0 };
  app.innerHTML = `<p class="nav"><a href="#/">lobby</a></p>
    <h1 id="title">game <code>${esc(gameId)}</code></h1>
    <p id="role">${seat ? `you play seat ${seat.seat}` : "watching as a spectator"}</p>
    <p id="result" aria-live="polite"></p>
    <p id="commitment" class="mono"></p>
    <div class="table"><div id="board"></div><div id="status"></div></div>
    <section class="card" id="controls-card"><h2>Your move</h2>
      <input id="filter" placeholder="filter moves (/)" aria-label="filter moves">
      <ol id="controls" aria-live="polite"></ol></section>
    <section class="card"><h2>The story</h2><ol id="story" reversed></ol></section>`;
  if (!seat) document.getElementById("controls-card")!.hidden = true;
  const filter = document.getElementById("filter") as HTMLInputElement;
  filter.addEventListener("input", () => drawControls(t));
  const abort = new AbortController();
  const keys = (e: KeyboardEvent) => onKey(e, t);
  document.addEventListener("keydown", keys);
  leave = () => {
    abort.abort();
    document.removeEventListener("keydown", keys);
  };
  // A seat's stream lasts as long as its token: at expiry it ends UNAUTHENTICATED, and the
  // page renews the token and watches again from the next version (nothing is missed or
  // told twice). Only a token past its expiry is renewed (2 s for clocks that differ): a
  // fresh token refused is no expiry, and the watch ends with the error.
  while (!t.finished && !abort.signal.aborted) {
    try {
      for await (const r of engine.watchGame(
        // The page draws its own board from the view's fields: no text board (omitRendered).
        { gameId, playerToken: seat?.playerToken ?? "", fromVersion: t.version + 1n, bursts: false, omitRendered: true },
        { signal: abort.signal },
      )) {
        await onWatch(t, r);
        if (t.finished) break;
      }
      if (!t.finished) throw new Error("the game's stream ended before the game");
    } catch (err) {
      if (abort.signal.aborted) return;
      const expired = seat !== undefined && err instanceof ConnectError && err.code === Code.Unauthenticated;
      if (expired && Date.now() >= t.tokenExpiresMs - 2000) {
        try {
          await renewSeatToken(t);
          continue;
        } catch (renewErr) {
          err = renewErr;
        }
      }
      story(`<span class="error">${esc(errorText(err))}</span>`);
      return;
    }
  }
}

/** A fresh token for the player's own seat (RenewPlayerToken, with the player's bearer
 * JWT), kept with the seat. */
async function renewSeatToken(t: Table): Promise<void> {
  const seat = t.seat!;
  const renewed = await engine.renewPlayerToken({ gameId: t.gameId });
  seat.playerToken = renewed.playerToken;
  t.tokenExpiresMs = Number(renewed.expiresUnixMs);
  await saveSeat(seat);
}

/** Call with the seat's token; when it has expired (UNAUTHENTICATED), renew it and call
 * again once. */
async function withSeatToken<R>(t: Table, call: (playerToken: string) => Promise<R>): Promise<R> {
  try {
    return await call(t.seat!.playerToken);
  } catch (err) {
    if (!(err instanceof ConnectError && err.code === Code.Unauthenticated)) throw err;
    await renewSeatToken(t);
    return await call(t.seat!.playerToken);
  }
}

function story(html: string): void {
  const li = document.createElement("li");
  li.innerHTML = html;
  document.getElementById("story")?.prepend(li);
}

async function onWatch(t: Table, r: WatchGameResponse): Promise<void> {
  const events = r.event ? [r.event] : r.events;
  for (const env of events) {
    t.version = env.version;
    const p = decodePayload(env);
    if (env.type === "GameCreated") {
      t.players = (p.seats as { player_id: string }[]).map((s) => s.player_id);
      const title = TITLE.get(String(p.game)) ?? String(p.game);
      setHtml("title", `${esc(title)} <code>${esc(t.gameId)}</code>`);
      const mine = t.seat ? `<br>your client seed is committed as ${esc(await seedCommitment(t.seat.clientSeed))}` : "";
      setHtml("commitment", `dice commitment <b id="dice-commitment">${esc(p.seed_commitment)}</b> (published before any roll)${mine}`);
      if (t.seat && !t.seat.revealed) void reveal(t);
    }
    if (env.type === "GameFinished") {
      t.finished = true;
      const ranking = (p.ranking as number[][]).map((group, i) => `${i + 1}. ${group.map((s) => esc(t.players[s] ?? s)).join(" = ")}`).join(" · ");
      const g = encodeURIComponent(t.gameId);
      setHtml("result", `<b id="game-over">game over</b>: ${ranking} · <a href="#/replay/${g}">replay</a> · <a id="audit-link" href="#/audit/${g}">audit it here</a>`);
      if (t.seat) await retireKey(t.seat);
    }
    // The story in the terminal's words (src/story.ts); a CommandAccepted, the signed record
    // of the move, says nothing there: the events after it tell the move.
    if (env.type === "GameCreated") t.names = namesOf(env);
    const line = storyLine(env.game, env, t.names);
    if (line) story(`<span class="v">v${env.version}</span> ${esc(line)}`);
  }
  if (r.view) {
    t.view = r.view;
    t.toAct = r.toAct;
    t.legal = r.legalActions;
    t.legalAt = t.version;
    setHtml("board", board(r.view));
    setHtml("status", statusLines(r.view, t.players));
    drawControls(t);
  }
}

async function reveal(t: Table): Promise<void> {
  const seat = t.seat!;
  try {
    await withSeatToken(t, (playerToken) => engine.revealSeed({ gameId: t.gameId, playerToken, clientSeed: seat.clientSeed }));
  } catch (err) {
    // Revealed already (a reload) is fine; anything else is shown.
    if (!(err instanceof ConnectError && err.code === Code.FailedPrecondition)) story(`<span class="error">reveal: ${esc(errorText(err))}</span>`);
  }
  seat.revealed = true;
  await saveSeat(seat);
  story(`you revealed your client seed <code>${esc(seat.clientSeed)}</code>`);
}

function myTurn(t: Table): boolean {
  return t.seat !== undefined && !t.finished && t.toAct.includes(t.seat.seat) && t.legal.length > 0;
}

function drawControls(t: Table): void {
  const list = document.getElementById("controls");
  if (!list) return;
  const words = (document.getElementById("filter") as HTMLInputElement).value.toLowerCase();
  if (!myTurn(t)) {
    list.innerHTML = t.finished ? "" : "<li>waiting for the others…</li>";
    return;
  }
  // While a move is out, redrawn moves (the filter changed) stay disabled like the others.
  list.innerHTML = t.legal
    .map((a, i) => [a, i, actionLabel(a)] as const)
    .filter(([, , label]) => label.includes(words))
    .map(([, i, label]) => `<li><button class="move" data-i="${i}"${t.busy ? " disabled" : ""} style="border-color:${SEAT_COLOURS[t.seat!.seat % SEAT_COLOURS.length]}">${esc(label)}</button></li>`)
    .join("");
  for (const b of list.querySelectorAll<HTMLButtonElement>("button.move")) {
    b.addEventListener("click", () => void submit(t, t.legal[Number(b.dataset.i)]!));
  }
}

/** Keyboard play: 1–9 play the n-th shown move, arrows move between moves (Enter plays the
 * one chosen), / filters (Enter there plays the first move shown, ↓ goes to the moves). */
function onKey(e: KeyboardEvent, t: Table): void {
  const target = e.target as HTMLElement;
  if (target.tagName === "INPUT") {
    if (e.key === "Enter") document.querySelector<HTMLButtonElement>("button.move")?.click();
    if (e.key === "ArrowDown") {
      e.preventDefault();
      document.querySelector<HTMLButtonElement>("button.move")?.focus();
    }
    return;
  }
  const buttons = [...document.querySelectorAll<HTMLButtonElement>("button.move")];
  if (e.key === "/") {
    e.preventDefault();
    document.getElementById("filter")?.focus();
  } else if (/^[1-9]$/.test(e.key) && myTurn(t)) {
    buttons[Number(e.key) - 1]?.click();
  } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
    const next = e.key === "ArrowDown" ? at + 1 : at <= 0 ? buttons.length - 1 : at - 1;
    buttons[next % Math.max(buttons.length, 1)]?.focus();
  }
}

/** Sign the action here with the seat's key (docs/auditing.md) and send it; keep the
 * engine's receipt for the audit. */
async function submit(t: Table, action: Action): Promise<void> {
  const seat = t.seat!;
  if (t.busy) return;
  t.busy = true;
  document.body.dataset.submitting = "1"; // until the answer and its receipt are stored
  for (const b of document.querySelectorAll<HTMLButtonElement>("button.move")) b.disabled = true;
  try {
    const bytes = toBinary(ActionSchema, action);
    const idempotencyKey = randomId();
    const expectedVersion = t.version;
    const signature = await sign(seat, commandSigningBytes(t.gameId, seat.seat, expectedVersion, idempotencyKey, bytes));
    // Seat tokens expire; the logged-in player renews its own and the same signed move
    // (same idempotency key) goes again.
    const res = await withSeatToken(t, (playerToken) =>
      engine.submitAction({ gameId: t.gameId, playerToken, action, expectedVersion, idempotencyKey, signature }),
    );
    const r = res.receipt;
    if (r) {
      seat.receipts.push({ gameId: r.gameId, version: Number(r.version), chainHead: hex(r.chainHead), keyId: r.keyId, signature: hex(r.signature), timeUnixMs: Number(r.timeUnixMs) });
      await saveSeat(seat);
    }
    // The move is played: its list is spent — unless the watch stream has already brought
    // the next one (the others moved before this answer arrived).
    if (t.legalAt === expectedVersion) t.legal = [];
  } catch (err) {
    story(`<span class="error">${esc(errorText(err))}</span>`);
  } finally {
    t.busy = false;
    document.body.dataset.submitting = "0";
    drawControls(t);
  }
}

// ---- the replay ---------------------------------------------------------------------------

async function replay(gameId: string): Promise<void> {
  app.innerHTML = `<p class="nav"><a href="#/">lobby</a> · <a href="#/audit/${encodeURIComponent(gameId)}">audit</a></p>
    <h1>replay <code>${esc(gameId)}</code></h1><p id="replay-status">loading…</p>
    <input id="slider" type="range" min="1" max="1" value="1" aria-label="version" disabled>
    <p id="at" class="mono"></p><div class="table"><div id="board"></div><div id="status"></div></div>`;
  const frames: { env: EventEnvelope; view?: GameView }[] = [];
  let players: string[] = [];
  let names: string[] = [];
  const abort = new AbortController();
  leave = () => abort.abort();
  try {
    for await (const r of engine.watchGame({ gameId, playerToken: "", fromVersion: 0n, omitRendered: true }, { signal: abort.signal })) {
      const env = r.event;
      if (!env) continue;
      if (env.type === "GameCreated") {
        players = (decodePayload(env).seats as { player_id: string }[]).map((s) => s.player_id);
        names = namesOf(env);
      }
      frames.push({ env, view: r.view });
      if (env.type === "GameFinished") break;
    }
  } catch (err) {
    if (!abort.signal.aborted) setHtml("replay-status", `<span class="error">${esc(errorText(err))}</span>`);
  }
  if (frames.length === 0) return;
  const slider = document.getElementById("slider") as HTMLInputElement;
  slider.max = String(frames.length);
  slider.value = String(frames.length);
  slider.disabled = false;
  const finished = frames[frames.length - 1]!.env.type === "GameFinished";
  document.getElementById("replay-status")!.textContent = `${frames.length} events${finished ? ", finished" : " so far"}: drag the slider or use ← →`;
  const show = () => {
    const i = Number(slider.value) - 1;
    const f = frames[i]!;
    let view: GameView | undefined;
    for (let k = i; k >= 0 && !view; k--) view = frames[k]!.view;
    document.getElementById("at")!.textContent = `v${f.env.version}: ${storyLine(f.env.game, f.env, names) || "a seat's signed move (the events after it tell it)"}`;
    setHtml("board", board(view));
    setHtml("status", statusLines(view, players));
  };
  slider.addEventListener("input", show);
  show();
  slider.focus();
}

// ---- the audit ----------------------------------------------------------------------------

async function audit(gameId: string): Promise<void> {
  app.innerHTML = `<p class="nav"><a href="#/">lobby</a> · <a href="#/replay/${encodeURIComponent(gameId)}">replay</a></p>
    <h1>audit <code>${esc(gameId)}</code></h1>
    <p>Checked here, in this browser, with WebCrypto, from the platform's public APIs: no trust in the server's verdict.</p>
    <p id="verdict" class="verdict">auditing…</p><div id="audit-detail"></div>`;
  const seat = await seatFor(gameId);
  let v: Verdict;
  try {
    const evidence = await fetchEvidence({ engine, dice, ledger }, gameId, seat?.receipts ?? []);
    v = await verifyGame(evidence);
  } catch (err) {
    setHtml("verdict", `<span class="error">could not audit: ${esc(errorText(err))}</span>`);
    return;
  }
  renderVerdict(v);
}

function renderVerdict(v: Verdict): void {
  const el = document.getElementById("verdict");
  const detail = document.getElementById("audit-detail");
  if (!el || !detail) return; // the reader went to another page meanwhile
  el.className = `verdict ${v.ok ? "pass" : "fail"}`;
  const f = v.failure;
  el.innerHTML = v.ok
    ? `PASS <span>${v.events} events, ${v.commands} signed commands, ${v.outcomes} outcomes, ${v.receipts} receipts, ${v.ledgerEntries} ledger entries</span>`
    : `FAIL <span id="failed-at">${esc(f!.check)} at ${esc(f!.where)}</span>`;
  detail.innerHTML =
    (f ? `<section class="card failure"><h2>The first failure</h2><p id="failure-message">${esc(f.message)}</p>${f.record ? `<pre id="failure-record">${esc(f.record)}</pre>` : ""}</section>` : "") +
    `<section class="card"><h2>Passed</h2><ul>${v.passed.map((p) => `<li>${esc(p)}</li>`).join("")}</ul>${v.chainHead ? `<p class="mono">chain head ${esc(v.chainHead)}</p>` : ""}</section>` +
    (v.histograms.length ? `<section class="card"><h2>Dice</h2><div class="histograms">${v.histograms.map(histogram).join("")}</div></section>` : "") +
    `<p class="note">Not checked here: that every event, and the money it moves, follows from the moves under the game's rules, nor each seat's balance against the ledger (the rules run in Python: <code>boulevard audit game ${esc(v.gameId)}</code>).</p>`;
}

function histogram(h: { purpose: string; sides: number; counts: number[] }): string {
  const max = Math.max(1, ...h.counts);
  const w = 24;
  const bars = h.counts
    .map((c, i) => `<rect x="${i * w + 2}" y="${100 - (80 * c) / max}" width="${w - 4}" height="${(80 * c) / max}" fill="#2f6fdb"/><text x="${i * w + w / 2}" y="114" text-anchor="middle" font-size="10">${i + 1}</text><text x="${i * w + w / 2}" y="${96 - (80 * c) / max}" text-anchor="middle" font-size="9">${c}</text>`)
    .join("");
  const total = h.counts.reduce((a, b) => a + b, 0);
  return `<figure><svg viewBox="0 0 ${h.sides * w + 4} 118" width="${h.sides * w + 4}" role="img" aria-label="${esc(h.purpose)} histogram">${bars}</svg><figcaption>${esc(h.purpose)}: ${total} d${h.sides}</figcaption></figure>`;
}

// ---- routing ------------------------------------------------------------------------------

async function route(): Promise<void> {
  leave?.();
  leave = undefined;
  const hash = location.hash;
  if (hash.startsWith("#token=")) {
    setToken(decodeURIComponent(hash.slice("#token=".length)));
    history.replaceState(null, "", location.pathname + "#/"); // the token leaves the address bar
    return route();
  }
  const [, page, id] = /^#\/(\w+)\/(.+)$/.exec(hash) ?? [];
  const gameId = decodeURIComponent(id ?? "");
  if (page === "game") return table(gameId);
  if (page === "replay") return replay(gameId);
  if (page === "audit") return audit(gameId);
  return lobby();
}

window.addEventListener("hashchange", () => void route());
void route();
