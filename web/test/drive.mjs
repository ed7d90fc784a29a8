// Drive the web app in Chromium with playwright-core, as a player would: log in, queue for a
// game with bot fill, play it to the end through the page's controls, open the audit page.
// Run by tests/browser/test_play.py; prints one JSON object per line (progress, then the
// result) and exits non-zero when the game could not be played or audited.
//
//   node test/drive.mjs '{"url":…,"token":…,"chromium":…,"games":["las_vegas"],
//                         "shots":DIR|null,"doctor":false,"keyboard":false,"spki":null}'
//
// doctor: after playing, serve the audit page a doctored GetGameLog (one digit of one
// ChanceResolved roll changed, in the stored bytes, the served chain hashes left as they
// were) by intercepting the response, and report the verdict the page shows.
//
// keyboard: play every move from the keyboard alone: arrows to the chosen move and Enter,
// or / and the move's words and Enter (every third move), checking each time that the
// arrows reached the move chosen. spki: for an https url, the base64 SHA-256 of the
// server certificate's public key, the one key Chromium may accept the page from (it
// trusts no local CA otherwise); a second Chromium without it first reports its refusal.
// Every run counts the page's RenewPlayerToken calls. pauseMs: before the fifth move, sit
// that long at the table without moving (a player thinking), outliving short seat tokens.

import { chromium } from "playwright-core";

const opts = JSON.parse(process.argv[2]);
const say = (obj) => console.log(JSON.stringify(obj));

// A small deterministic generator, so a failing run can be replayed with the same choices.
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Which move to play: end the turn soon (short games), never start trades (a bot's answer
 * brings the same choice back) or staged renovations, otherwise a random legal move. */
function choose(labels, random) {
  // A Vegas Showdown renovation in stages is never started at random (most lead nowhere);
  // one under way is finished when it can be, else dropped.
  const finish = labels.findIndex((l) => /^(finish renovation|cancel renovation)/.test(l));
  if (finish >= 0) return finish;
  const ending = labels.findIndex((l) => /^(end turn|pass turn)/.test(l));
  if (ending >= 0 && random() < 0.6) return ending;
  const fine = labels.map((l, i) => [l, i]).filter(([l]) => !/^(propose trade|stage renovation)/.test(l));
  const pool = fine.length ? fine : labels.map((l, i) => [l, i]);
  return pool[Math.floor(random() * pool.length)][1];
}

async function playOne(page, game, random) {
  await page.goto(`${opts.url}/#/`);
  await page.selectOption("#game", game);
  // The smallest table the game allows: the shortest game (bots fill the other seats).
  const seats = await page.$eval("#seats", (s) => s.options[0].value);
  await page.selectOption("#seats", seats);
  await page.fill("#bot-fill", "1");
  await page.click("#queue");
  await page.waitForURL(/#\/game\//, { timeout: 60_000 });
  const gameId = decodeURIComponent(page.url().split("#/game/")[1]);
  say({ event: "seated", game, gameId });
  await page.waitForSelector("#dice-commitment", { timeout: 30_000 });
  const started = Date.now();
  let moves = 0;
  let keys = 0;
  let shot = false;
  for (;;) {
    const state = await page.waitForFunction(
      () => {
        if (document.getElementById("game-over")) return "over";
        const b = [...document.querySelectorAll("button.move")];
        return b.length > 0 && b.every((x) => !x.disabled) ? "move" : false;
      },
      null,
      { timeout: opts.moveTimeout ?? 120_000, polling: 50 },
    );
    if ((await state.jsonValue()) === "over") break;
    const labels = await page.$$eval("button.move", (bs) => bs.map((b) => b.textContent ?? ""));
    const i = choose(labels, random);
    if (opts.pauseMs && moves === 4) await page.waitForTimeout(opts.pauseMs);
    // Keyboard play for the first nine moves shown, a click for the others.
    const played = () =>
      page.waitForFunction(
        () => [...document.querySelectorAll("button.move")].every((b) => b.disabled) || document.getElementById("game-over"),
        null,
        { timeout: 5_000, polling: 20 },
      );
    if (opts.keyboard) {
      await byKeyboard(page, labels, i, moves);
      keys += 1;
    } else if (i < 9 && moves % 2 === 0) {
      await page.keyboard.press(String(i + 1));
      keys += 1;
    } else {
      await page.click(`button.move >> nth=${i}`);
    }
    moves += 1;
    await played().catch(() => {});
    if (moves === 1) {
      // Mid-game, the seat's private key is in IndexedDB as a CryptoKey the page can sign
      // with but not export.
      const key = await page.evaluate(async (id) => {
        const db = await new Promise((ok, no) => { const r = indexedDB.open("boulevard"); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
        const seats = await new Promise((ok) => { const r = db.transaction("seats").objectStore("seats").getAll(); r.onsuccess = () => ok(r.result); });
        const k = seats.find((x) => x.gameId === id)?.privateKey;
        if (!k) return { present: false };
        let exported = true;
        try { await crypto.subtle.exportKey("pkcs8", k); } catch { exported = false; }
        return { present: true, extractable: k.extractable, exported, algorithm: k.algorithm.name };
      }, gameId);
      say({ event: "key", game, gameId, ...key });
    }
    if (opts.shots && !opts.doctor && !shot && moves >= 12) {
      await page.screenshot({ path: `${opts.shots}/web-play-${game}.png`, fullPage: true });
      if (game === opts.games[0]) {
        // A phone-sized screen: the board above the moves, nothing wider than the screen.
        await page.setViewportSize({ width: 390, height: 844 });
        const wide = await page.evaluate(() => document.documentElement.scrollWidth);
        say({ event: "phone", game, scrollWidth: wide });
        await page.screenshot({ path: `${opts.shots}/web-phone-${game}.png` });
        await page.setViewportSize({ width: 1100, height: 900 });
      }
      shot = true;
    }
    if (moves > 3000) throw new Error(`${game}: no end after ${moves} moves`);
  }
  const seconds = (Date.now() - started) / 1000;
  say({ event: "finished", game, gameId, moves, keys, seconds });
  // The story as the page tells it (newest first), for the test to read.
  const told = await page.$$eval("#story li", (ls) => ls.map((l) => l.textContent ?? ""));
  const shown = await page.$$eval("#story .error", (es) => es.map((e) => e.textContent ?? ""));
  // The versions told, oldest first: each once, none missing, whatever the stream went through.
  const versions = told.map((l) => /^v(\d+) /.exec(l)?.[1]).filter((v) => v !== undefined).map(Number).reverse();
  say({ event: "story", game, gameId, lines: told.slice(-40), errors: shown, versions });
  return gameId;
}

/** Play labels[i] with keys only: / + its words + Enter every third move, else arrows from
 * wherever the focus is to the move (checked) + Enter. */
async function byKeyboard(page, labels, i, moves) {
  if (moves % 3 === 2) {
    await page.keyboard.press("/");
    await page.keyboard.type(labels[i]);
    const first = await page.$eval("button.move", (b) => b.textContent);
    if (!first || !first.includes(labels[i])) throw new Error(`filtering for "${labels[i]}" shows "${first}" first`);
    await page.keyboard.press("Enter");
    // Empty the filter again (the focus stays in it; ↓ leaves it for the moves).
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Backspace");
    return;
  }
  const at = await page.evaluate(() => [...document.querySelectorAll("button.move")].indexOf(document.activeElement));
  // From no focus ↓ goes to the first move and ↑ to the last (every other move comes up
  // from the bottom).
  const fromBottom = moves % 3 === 1;
  const presses =
    at < 0 ? (fromBottom ? ["ArrowUp", labels.length - i] : ["ArrowDown", i + 1]) : i > at ? ["ArrowDown", i - at] : ["ArrowUp", at - i];
  for (let k = 0; k < presses[1]; k++) await page.keyboard.press(presses[0]);
  const focused = await page.evaluate(() => document.activeElement?.textContent ?? "");
  if (focused !== labels[i]) throw new Error(`${presses[1]} × ${presses[0]} from ${at} focused "${focused}", not move ${i} "${labels[i]}"`);
  await page.keyboard.press("Enter");
}

async function auditPage(page, gameId) {
  await page.goto(`${opts.url}/#/`);
  await page.waitForSelector("#player");
  await page.goto(`${opts.url}/#/audit/${encodeURIComponent(gameId)}`);
  const verdict = await page.waitForSelector("#verdict.pass, #verdict.fail, #verdict .error", { timeout: 120_000 });
  return {
    verdict: (await verdict.textContent()) ?? "",
    failedAt: (await page.$eval("#failed-at", (e) => e.textContent).catch(() => null)),
    message: (await page.$eval("#failure-message", (e) => e.textContent).catch(() => null)),
    passed: await page.$$eval("#audit-detail li", (els) => els.map((e) => e.textContent ?? "")),
  };
}

/** The stored bytes of one ChanceResolved roll, with one value's digit changed (same length,
 * so the protobuf around it still decodes): a forged event. */
function doctor(body) {
  const text = Buffer.from(body).toString("latin1");
  const at = text.search(/"kind":"roll","nonce":\d+,"purpose":"[a-z_]+","sides":6,"type":"ChanceResolved","values":\[[1-6]/);
  if (at < 0) return null;
  const digit = text.indexOf('"values":[', at) + '"values":['.length;
  const forged = Buffer.from(body);
  forged[digit] = forged[digit] === 0x31 ? 0x32 : 0x31;
  return forged;
}

const args = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"];
if (opts.spki) {
  // Without the pin, Chromium refuses the platform's certificate (a local CA it does not know).
  const plain = await chromium.launch({ executablePath: opts.chromium, args });
  const refused = await (await plain.newPage()).goto(opts.url).then(() => null, (e) => String(e.message).split("\n")[0]);
  await plain.close();
  say({ event: "untrusted", refused });
  args.push(`--ignore-certificate-errors-spki-list=${opts.spki}`);
}
const browser = await chromium.launch({ executablePath: opts.chromium, args });
let failed = false;
let page;
try {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  let renewals = 0;
  const origins = new Set();
  page.on("request", (r) => {
    origins.add(new URL(r.url()).origin);
    if (r.url().endsWith("/boulevard.v1.EngineService/RenewPlayerToken")) renewals += 1;
  });
  await page.goto(`${opts.url}/#token=${encodeURIComponent(opts.token)}`);
  await page.waitForSelector("#player");
  if (opts.shots && !opts.doctor) await page.screenshot({ path: `${opts.shots}/web-lobby.png`, fullPage: true });
  const random = rng(27);
  for (const game of opts.games) {
    const gameId = await playOne(page, game, random);
    // The last move's answer (and its receipt) may come after the stream's GameFinished.
    await page.waitForFunction(() => document.body.dataset.submitting !== "1", null, { timeout: 30_000 });
    // The seat's key: made non-extractable, and dropped at the game's end.
    const keys = await page.evaluate(async (id) => {
      const db = await new Promise((ok, no) => { const r = indexedDB.open("boulevard"); r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
      const seats = await new Promise((ok) => { const r = db.transaction("seats").objectStore("seats").getAll(); r.onsuccess = () => ok(r.result); });
      const seat = seats.find((x) => x.gameId === id);
      return { found: !!seat, dropped: seat?.privateKey === null, receipts: seat?.receipts.length ?? 0, publicKey: seat?.publicKey };
    }, gameId);
    say({ event: "keys", game, gameId, ...keys });
    const result = await auditPage(page, gameId);
    say({ event: "audit", game, gameId, ...result });
    if (opts.shots && !opts.doctor && game === opts.games[0]) {
      await page.screenshot({ path: `${opts.shots}/web-audit.png`, fullPage: true });
      await page.goto(`${opts.url}/#/replay/${encodeURIComponent(gameId)}`);
      await page.waitForSelector("#slider:not([disabled])");
      await page.focus("#slider");
      for (let i = 0; i < 20; i++) await page.keyboard.press("ArrowLeft");
      await page.screenshot({ path: `${opts.shots}/web-replay.png`, fullPage: true });
    }
    if (opts.doctor) {
      // A spectator (another browser profile, so no seat of this game) watches it, and its
      // replay has one position per event.
      const other = await browser.newContext({ viewport: { width: 1100, height: 900 } });
      const watcher = await other.newPage();
      await watcher.goto(`${opts.url}/#token=${encodeURIComponent(opts.token)}`);
      await watcher.waitForSelector("#player");
      await watcher.goto(`${opts.url}/#/game/${encodeURIComponent(gameId)}`);
      await watcher.waitForSelector("#game-over", { timeout: 60_000 });
      const role = await watcher.$eval("#app", (e) => e.innerText);
      const boards = await watcher.$$eval("#board svg", (s) => s.length);
      await watcher.goto(`${opts.url}/#/replay/${encodeURIComponent(gameId)}`);
      await watcher.waitForSelector("#slider:not([disabled])");
      const positions = Number(await watcher.$eval("#slider", (e) => e.max));
      say({ event: "spectator", game, gameId, spectator: role.includes("watching as a spectator"), boards, positions, noControls: !role.includes("Your move") || (await watcher.$$eval("button.move", (b) => b.length)) === 0 });
      await other.close();
      let forgedVersion = null;
      await page.route("**/boulevard.v1.EngineService/GetGameLog", async (route) => {
        const response = await route.fetch();
        const body = await response.body();
        const forged = doctor(body);
        forgedVersion = forged === null ? null : "forged";
        await route.fulfill({ response, body: forged ?? body });
      });
      const doctored = await auditPage(page, gameId);
      await page.unroute("**/boulevard.v1.EngineService/GetGameLog");
      say({ event: "doctored", game, gameId, forged: forgedVersion, ...doctored });
      if (opts.shots) await page.screenshot({ path: `${opts.shots}/web-audit-fail.png`, fullPage: true });
    }
  }
  say({ event: "requests", renewals, origins: [...origins] });
  if (errors.length) say({ event: "page-errors", errors });
} catch (err) {
  failed = true;
  const story = page ? await page.$eval("#app", (e) => e.innerText).catch(() => "") : "";
  say({ event: "error", error: String(err && err.stack ? err.stack : err), page: story.slice(0, 4000) });
  if (page && opts.shots) await page.screenshot({ path: `${opts.shots}/error.png`, fullPage: true }).catch(() => {});
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
