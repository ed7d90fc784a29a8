"""Audit reports a person reads: one self-contained HTML file (inline CSS and SVG charts, no
script, nothing fetched from the network) written by `boulevard audit … --html FILE`.

Fed plain data (the dataclasses below) by the audit commands; `write_report` is the one
entry point, so every audit (dice, ledger, and those to come) writes the same kind of page:
the verdict, then every failure with the record that failed, then the evidence — per game
the dice commitment, reveal and every outcome with its nonce and use, dice histograms with
χ² per die size, the ledger's signed heads, each entry's proof status, and balances over
time.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# --- the data an audit hands over ----------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """One check that failed: where, why, and the record it failed on (shown as JSON)."""

    where: str
    message: str
    record: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OutcomeRow:
    nonce: int
    kind: str  # "roll" or "shuffle"
    count: int
    sides: int
    values: tuple[int, ...]
    purpose: str = ""
    used_at: int | None = None  # the game version of the ChanceResolved that used it
    status: str = "ok"  # "ok", "fail", or "unchecked"
    note: str = ""


@dataclass(frozen=True)
class DiceGame:
    game_id: str
    ok: bool
    verdict: str  # one line, as the terminal says it
    scheme: str = ""
    commitment: str = ""
    client_seeds: tuple[str, ...] = ()
    revealed_seed: str = ""  # empty: not revealed
    outcome_count: int | None = None  # as the reveal states it
    outcomes: tuple[OutcomeRow, ...] = ()
    failures: tuple[Failure, ...] = ()


@dataclass(frozen=True)
class HeadRow:
    tree_size: int
    root_hash: str
    time_unix_ms: int
    key_id: str
    signature_ok: bool
    consistent: bool | None = None  # with the head before it; None for the first


@dataclass(frozen=True)
class PostingRow:
    account: str
    amount: int
    reason: str = ""


@dataclass(frozen=True)
class EntryRow:
    seq: int
    book: str
    version: int
    event_type: str
    time_unix_ms: int
    postings: tuple[PostingRow, ...]
    hash: str
    proof: str  # "included", "FAILED: …", or "not covered by a head yet"


@dataclass(frozen=True)
class LedgerAudit:
    ok: bool
    verdict: str
    game: str = ""  # the game audited alone, or "" for the whole journal
    public_key: str = ""
    heads: tuple[HeadRow, ...] = ()
    entries: tuple[EntryRow, ...] = ()
    failures: tuple[Failure, ...] = ()


@dataclass(frozen=True)
class GameLogAudit:
    """One game's log audit (`audit game`): its verdict, and where it failed."""

    game_id: str
    ok: bool
    verdict: str
    version: int | None = None  # the first version that does not follow


# --- statistics ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DieStats:
    sides: int
    counts: tuple[int, ...]  # faces 1..sides
    rolls: int
    chi2: float
    df: int
    p_value: float


def die_stats(games: Sequence[DiceGame]) -> list[DieStats]:
    """Face counts and Pearson's χ² against a fair die, per die size, over every roll of
    the games (shuffles are permutations, not faces, and are left out)."""
    faces: dict[int, Counter[int]] = defaultdict(Counter)
    for g in games:
        for o in g.outcomes:
            if o.kind == "roll" and 1 < o.sides <= 100:
                faces[o.sides].update(v for v in o.values if 1 <= v <= o.sides)
    out = []
    for sides in sorted(faces):
        counts = tuple(faces[sides][f] for f in range(1, sides + 1))
        n = sum(counts)
        expected = n / sides
        chi2 = sum((c - expected) ** 2 / expected for c in counts) if n else 0.0
        df = sides - 1
        out.append(DieStats(sides, counts, n, chi2, df, chi2_p_value(chi2, df)))
    return out


def chi2_p_value(chi2: float, df: int) -> float:
    """P(X ≥ chi2) for X ~ χ²(df): the regularized upper incomplete gamma Q(df/2, chi2/2),
    by its series below a + 1 and its continued fraction above (Numerical Recipes 6.2)."""
    a, x = df / 2.0, chi2 / 2.0
    if x <= 0:
        return 1.0
    log_prefix = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        ap = a
        for _ in range(1000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * math.exp(log_prefix))
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_prefix) * h)


# --- charts (inline SVG) -------------------------------------------------------------------

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def histogram_svg(stats: DieStats) -> str:
    """Bars of face counts with the fair expectation as a dashed line."""
    width, height, pad = 360, 180, 28
    top = max(max(stats.counts, default=0), 1)
    expected = stats.rolls / stats.sides if stats.sides else 0
    scale = (height - 2 * pad) / max(top, expected, 1)
    bar = (width - 2 * pad) / stats.sides
    parts = [
        f'<svg class="chart histogram" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>d{stats.sides}: faces rolled, {stats.rolls} dice</title>",
    ]
    for i, count in enumerate(stats.counts):
        h = count * scale
        x = pad + i * bar
        parts.append(
            f'<rect x="{x + 2:.1f}" y="{height - pad - h:.1f}" width="{bar - 4:.1f}" '
            f'height="{h:.1f}" fill="{PALETTE[0]}"><title>face {i + 1}: {count}</title></rect>'
        )
        if stats.sides <= 20:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - pad + 14}" text-anchor="middle" '
                f'font-size="11">{i + 1}</text>'
            )
    y = height - pad - expected * scale
    parts.append(
        f'<line x1="{pad}" x2="{width - pad}" y1="{y:.1f}" y2="{y:.1f}" stroke="{PALETTE[1]}" '
        f'stroke-dasharray="4 3"><title>expected {expected:.1f} per face</title></line>'
    )
    parts.append(
        f'<line x1="{pad}" x2="{width - pad}" y1="{height - pad}" y2="{height - pad}" '
        'stroke="#444"/>'
    )
    parts.append("</svg>")
    return "".join(parts)


def balances_svg(book: str, series: dict[str, list[tuple[int, int]]]) -> str:
    """One line per account: its balance after each entry of the book (x: entry number)."""
    width, height, pad, legend = 640, 240, 40, 150
    points = [p for s in series.values() for p in s]
    if not points:
        return ""
    xs = [x for x, _ in points]
    ys = [y for _, y in points] + [0]
    x0, x1 = min(xs), max(max(xs), min(xs) + 1)
    y0, y1 = min(ys), max(max(ys), min(ys) + 1)
    plot_w = width - 2 * pad - legend

    def px(x: int) -> float:
        return pad + (x - x0) / (x1 - x0) * plot_w

    def py(y: int) -> float:
        return height - pad - (y - y0) / (y1 - y0) * (height - 2 * pad)

    parts = [
        f'<svg class="chart balances" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>balances in book {_e(book)} after each entry</title>",
        f'<line x1="{pad}" x2="{pad + plot_w}" y1="{py(0):.1f}" y2="{py(0):.1f}" stroke="#999"/>',
        f'<text x="{pad - 4}" y="{py(y1) + 4:.1f}" text-anchor="end" font-size="10">{y1}</text>',
        f'<text x="{pad - 4}" y="{py(y0) + 4:.1f}" text-anchor="end" font-size="10">{y0}</text>',
        f'<text x="{pad}" y="{height - pad + 14}" font-size="10">entry {x0}</text>',
        f'<text x="{pad + plot_w}" y="{height - pad + 14}" text-anchor="end" font-size="10">'
        f"entry {x1}</text>",
    ]
    for i, (account, line) in enumerate(sorted(series.items())):
        colour = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{path}">'
            f"<title>{_e(account)}</title></polyline>"
        )
        ly = pad + i * 16
        parts.append(
            f'<rect x="{width - legend + 8}" y="{ly - 9}" width="10" height="10" '
            f'fill="{colour}"/><text x="{width - legend + 22}" y="{ly}" font-size="11">'
            f"{_e(account)} {line[-1][1]}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def balance_series(entries: Sequence[EntryRow]) -> dict[str, dict[str, list[tuple[int, int]]]]:
    """book -> account -> [(entry seq, balance after it)], from the entries' postings."""
    books: dict[str, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    running: dict[tuple[str, str], int] = defaultdict(int)
    for e in entries:
        changed: dict[str, int] = defaultdict(int)
        for p in e.postings:
            changed[p.account] += p.amount
        for account, change in changed.items():
            running[(e.book, account)] += change
            books[e.book][account].append((e.seq, running[(e.book, account)]))
    return {b: dict(a) for b, a in books.items()}


# --- the page ------------------------------------------------------------------------------

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #111; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { border-bottom: 2px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
.verdict { font-size: 1.3em; font-weight: bold; padding: .7em 1em; border-radius: 6px; }
.verdict.pass { background: #dcfce7; color: #14532d; border: 2px solid #16a34a; }
.verdict.fail { background: #fee2e2; color: #7f1d1d; border: 2px solid #dc2626; }
.failure { border-left: 4px solid #dc2626; background: #fff5f5; padding: .5em 1em;
           margin: .8em 0; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 12px; margin: .6em 0; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 3px 6px; text-align: left;
         vertical-align: top; }
th { background: #fafafa; }
td.mono, .mono { font-family: ui-monospace, monospace; word-break: break-all; }
tr.row-fail td { background: #fee2e2; }
tr.row-unchecked td { color: #888; }
.ok { color: #15803d; font-weight: bold; }
.bad { color: #b91c1c; font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; }
figcaption { font-size: 12px; color: #444; max-width: 360px; }
details summary { cursor: pointer; font-weight: bold; margin: .6em 0; }
"""


def _mark(ok: bool | None, yes: str = "✓", no: str = "✗") -> str:
    if ok is None:
        return "–"
    return f'<span class="ok">{yes}</span>' if ok else f'<span class="bad">{no}</span>'


def _time(ms: int) -> str:
    if not ms:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _failure(f: Failure) -> str:
    record = json.dumps(f.record, indent=2, sort_keys=True, default=str) if f.record else ""
    return (
        f'<div class="failure"><b>{_e(f.where)}</b>: {_e(f.message)}'
        + (f"<pre>{_e(record)}</pre>" if record else "")
        + "</div>"
    )


def _dice_section(games: Sequence[DiceGame]) -> list[str]:
    out = ["<h2>Dice</h2>"]
    stats = die_stats(games)
    if stats:
        out.append(
            f"<p>Every die rolled in the {len(games)} audited game(s), by size: the bars are "
            "how often each face came up, the dashed line what a fair die gives on average. "
            "χ² tests the counts against a fair die; a p-value below 0.001 would be "
            "surprising.</p>"
        )
        out.append('<div class="charts">')
        for s in stats:
            out.append(
                f"<figure>{histogram_svg(s)}<figcaption>d{s.sides}: {s.rolls} dice; "
                f"χ² = {s.chi2:.2f} with {s.df} degrees of freedom, p = {s.p_value:.3f}"
                "</figcaption></figure>"
            )
        out.append("</div>")
    for g in games:
        rolls = sum(1 for o in g.outcomes if o.kind == "roll")
        out.append(f'<h3 id="dice-{_e(g.game_id)}">Game {_e(g.game_id)} {_mark(g.ok)}</h3>')
        out.append(f"<p>{_e(g.verdict)}</p>")
        out.append("<table>")
        out.append(f'<tr><th>scheme</th><td class="mono">{_e(g.scheme)}</td></tr>')
        out.append(
            "<tr><th>commitment (SHA-256 of the server seed, published first)</th>"
            f'<td class="mono">{_e(g.commitment)}</td></tr>'
        )
        seeds = "<br>".join(_e(s) for s in g.client_seeds) or "none"
        out.append(f'<tr><th>client seeds</th><td class="mono">{seeds}</td></tr>')
        reveal = _e(g.revealed_seed) if g.revealed_seed else "not revealed"
        out.append(f'<tr><th>revealed server seed</th><td class="mono">{reveal}</td></tr>')
        if g.outcome_count is not None:
            out.append(
                f"<tr><th>outcomes issued (the reveal says)</th><td>{g.outcome_count} "
                f"({rolls} rolls, {len(g.outcomes) - rolls} shuffles recorded)</td></tr>"
            )
        out.append("</table>")
        out.append(
            f"<details open><summary>{len(g.outcomes)} outcomes</summary><table>"
            "<tr><th>nonce</th><th>kind</th><th>dice / items</th><th>values</th>"
            "<th>purpose</th><th>used at</th><th>re-derived</th><th>note</th></tr>"
        )
        for o in g.outcomes:
            size = f"{o.count}d{o.sides}" if o.kind == "roll" else f"{o.count} items"
            status = {"ok": _mark(True), "fail": _mark(False)}.get(o.status, "not checked")
            used = f"v{o.used_at}" if o.used_at is not None else "unused"
            values = " ".join(str(v) for v in o.values)
            out.append(
                f'<tr class="row-{_e(o.status)}"><td>{o.nonce}</td><td>{_e(o.kind)}</td>'
                f'<td>{size}</td><td class="mono">{_e(values)}</td><td>{_e(o.purpose)}</td>'
                f"<td>{used}</td><td>{status}</td><td>{_e(o.note)}</td></tr>"
            )
        out.append("</table></details>")
    return out


def _games_section(games: Sequence[GameLogAudit]) -> list[str]:
    passed = sum(1 for g in games if g.ok)
    out = [
        f"<h2>Game logs ({passed}/{len(games)} pass)</h2>",
        "<p>Each game's log re-run under its rules from its players' signed commands and "
        "the recorded dice.</p><table><tr><th>game</th><th>verdict</th><th></th></tr>",
    ]
    for g in games:
        out.append(
            f'<tr class="{"row-ok" if g.ok else "row-fail"}"><td class="mono">'
            f"{_e(g.game_id)}</td><td>{_mark(g.ok)}</td><td>{_e(g.verdict)}</td></tr>"
        )
    out.append("</table>")
    return out


def _ledger_section(ledger: LedgerAudit) -> list[str]:
    scope = f"game {ledger.game}" if ledger.game else "the whole journal"
    out = [f"<h2>Ledger — {_e(scope)}</h2>", f"<p>{_e(ledger.verdict)}</p>"]
    if ledger.public_key:
        out.append(
            f'<p>Tree heads checked with the Ed25519 key <span class="mono">'
            f"{_e(ledger.public_key)}</span>.</p>"
        )
    series = balance_series(ledger.entries)
    if series:
        out.append("<h3>Balances over time</h3>")
        books = sorted(series)
        shown = books[:12]
        out.append('<div class="charts">')
        for book in shown:
            out.append(
                f"<figure>{balances_svg(book, series[book])}<figcaption>book "
                f"{_e(book)}: each account's balance after each entry</figcaption></figure>"
            )
        out.append("</div>")
        if len(books) > len(shown):
            out.append(f"<p>{len(books) - len(shown)} more books are in the tables below.</p>")
    out.append(f"<h3>Signed tree heads ({len(ledger.heads)})</h3><table>")
    out.append(
        "<tr><th>size</th><th>root hash</th><th>signed at (UTC)</th><th>key id</th>"
        "<th>signature</th><th>consistent with the one before</th></tr>"
    )
    for h in ledger.heads:
        bad = not h.signature_ok or h.consistent is False
        out.append(
            f'<tr class="{"row-fail" if bad else "row-ok"}"><td>{h.tree_size}</td>'
            f'<td class="mono">{_e(h.root_hash)}</td><td>{_time(h.time_unix_ms)}</td>'
            f'<td class="mono">{_e(h.key_id)}</td><td>{_mark(h.signature_ok)}</td>'
            f"<td>{_mark(h.consistent)}</td></tr>"
        )
    out.append("</table>")
    out.append(
        f"<details open><summary>{len(ledger.entries)} entries</summary><table>"
        "<tr><th>seq</th><th>book</th><th>version</th><th>event</th><th>time (UTC)</th>"
        "<th>postings</th><th>hash</th><th>inclusion proof</th></tr>"
    )
    for e in ledger.entries:
        postings = "<br>".join(
            f"{_e(p.account)} {p.amount:+d}" + (f" ({_e(p.reason)})" if p.reason else "")
            for p in e.postings
        )
        proved = e.proof == "included"
        row = "row-ok" if proved or e.proof.startswith("not covered") else "row-fail"
        out.append(
            f'<tr class="{row}">'
            f"<td>{e.seq}</td><td>{_e(e.book)}</td><td>{e.version}</td>"
            f"<td>{_e(e.event_type)}</td><td>{_time(e.time_unix_ms)}</td><td>{postings}</td>"
            f'<td class="mono">{_e(e.hash[:16])}…</td>'
            f"<td>{_mark(True, 'included') if proved else _e(e.proof)}</td></tr>"
        )
    out.append("</table></details>")
    return out


def render_html(
    title: str,
    *,
    dice: Sequence[DiceGame] = (),
    ledger: LedgerAudit | None = None,
    games: Sequence[GameLogAudit] = (),
    extra_failures: Sequence[Failure] = (),
    generated_at: datetime | None = None,
) -> str:
    """The whole page. The verdict passes only when every part passed; every failure is
    listed before any evidence."""
    failures = list(extra_failures)
    for log in games:
        if not log.ok:
            where = f"game {log.game_id}" + (f", version {log.version}" if log.version else "")
            failures.append(Failure(where, log.verdict, {"game_id": log.game_id}))
    for g in dice:
        failures.extend(g.failures)
    if ledger is not None:
        failures.extend(ledger.failures)
    ok = (
        not failures
        and all(g.ok for g in dice)
        and all(g.ok for g in games)
        and (ledger is None or ledger.ok)
    )
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S UTC")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No script, no fetch: the report opens offline and runs nothing.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>Written {when} by <code>boulevard audit</code> from the services' public APIs, "
        "every check recomputed locally.</p>",
        f'<div id="verdict" class="verdict {"pass" if ok else "fail"}">'
        f"{'PASS' if ok else 'FAIL'} — "
        + _e(_summary(dice, ledger, games, len(failures)))
        + "</div>",
    ]
    if failures:
        parts.append(f'<h2 id="failures">Failures ({len(failures)})</h2>')
        parts.extend(_failure(f) for f in failures)
    if games:
        parts.extend(_games_section(games))
    if dice:
        parts.extend(_dice_section(dice))
    if ledger is not None:
        parts.extend(_ledger_section(ledger))
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary(
    dice: Sequence[DiceGame],
    ledger: LedgerAudit | None,
    games: Sequence[GameLogAudit],
    failures: int,
) -> str:
    bits = []
    if games:
        bits.append(f"game logs: {sum(1 for g in games if g.ok)}/{len(games)} pass")
    if dice:
        outcomes = sum(len(g.outcomes) for g in dice)
        passed = sum(1 for g in dice if g.ok)
        bits.append(f"dice: {passed}/{len(dice)} games, {outcomes} outcomes")
    if ledger is not None:
        bits.append(
            f"ledger: {len(ledger.entries)} entries, {len(ledger.heads)} signed heads"
            + (" — " + ledger.verdict if not ledger.ok else "")
        )
    if failures:
        bits.append(f"{failures} failure(s) listed first")
    return "; ".join(bits)


def write_report(
    path: str | Path,
    title: str,
    *,
    dice: Sequence[DiceGame] = (),
    ledger: LedgerAudit | None = None,
    games: Sequence[GameLogAudit] = (),
    extra_failures: Sequence[Failure] = (),
) -> Path:
    """Write the page to `path` (UTF-8); the path written."""
    out = Path(path)
    page = render_html(title, dice=dice, ledger=ledger, games=games, extra_failures=extra_failures)
    out.write_text(page, encoding="utf-8")
    return out
