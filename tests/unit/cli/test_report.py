"""The audit report page from plain data: verdict, failures first with their record,
charts, χ², and nothing a hostile record can smuggle into the page."""

from __future__ import annotations

import math
import random

import pytest

from boulevard.cli.report import (
    DiceGame,
    EntryRow,
    Failure,
    HeadRow,
    LedgerAudit,
    OutcomeRow,
    PostingRow,
    balance_series,
    chi2_p_value,
    die_stats,
    render_html,
)


def game(ok: bool = True, values: tuple[int, ...] = (3, 4), **extra: object) -> DiceGame:
    outcome = OutcomeRow(0, "roll", len(values), 6, values, "gamble", used_at=7)
    return DiceGame(
        "g1", ok, "PASS" if ok else "FAIL", "boulevard-fairness-v1", "ab" * 32,
        ("seed-0",), "cd" * 32, 1, (outcome,), **extra,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize(
    ("chi2", "df", "p"),
    [(0.0, 5, 1.0), (5.0, 5, 0.41588), (11.0705, 5, 0.05), (30.0, 3, 1.38e-6), (2.0, 1, 0.1573)],
)
def test_the_p_value_is_the_chi_squared_tail(chi2: float, df: int, p: float) -> None:
    assert math.isclose(chi2_p_value(chi2, df), p, rel_tol=2e-3)


def test_die_stats_count_faces_per_die_size_and_leave_shuffles_out() -> None:
    rng = random.Random(3)
    fair = tuple(rng.randint(1, 6) for _ in range(6000))
    loaded = (6,) * 100
    g = game(values=fair)
    shuffle = OutcomeRow(1, "shuffle", 4, 0, (2, 0, 3, 1))
    (d6,) = die_stats([g, DiceGame("g2", True, "", outcomes=(shuffle,))])
    assert d6.sides == 6 and d6.rolls == 6000 and sum(d6.counts) == 6000
    assert d6.p_value > 0.001
    (biased,) = die_stats([game(values=loaded)])
    assert biased.counts == (0, 0, 0, 0, 0, 100) and biased.p_value < 1e-6


def test_a_passing_report_says_pass_and_draws_its_charts() -> None:
    entries = (
        EntryRow(1, "g1", 3, "CardDrawn", 0, (PostingRow("bank", -5), PostingRow("seat:0", 5)),
                 "00" * 32, "included"),
        EntryRow(2, "g1", 5, "CasinoBuilt", 0, (PostingRow("seat:0", -2), PostingRow("bank", 2)),
                 "11" * 32, "included"),
    )  # fmt: skip
    ledger = LedgerAudit(
        True, "PASS", "g1", "ee" * 32, (HeadRow(2, "ff" * 32, 0, "k", True),), entries
    )
    page = render_html("Audit", dice=[game()], ledger=ledger)
    assert 'id="verdict" class="verdict pass">PASS — ' in page
    assert 'id="failures"' not in page
    assert page.count('class="chart histogram"') == 1
    assert page.count('class="chart balances"') == 1
    assert "<script" not in page
    assert balance_series(entries) == {
        "g1": {"bank": [(1, -5), (2, -3)], "seat:0": [(1, 5), (2, 3)]}
    }


def test_every_failure_comes_first_with_the_record_that_failed() -> None:
    bad = Failure("game g1, nonce 0", "values_mismatch: 1d6 does not re-derive",
                  {"nonce": 0, "values": [6], "expected": [2]})  # fmt: skip
    head = Failure("tree head of size 9", "bad signature", {"tree_size": 9})
    ledger = LedgerAudit(False, "FAIL entry 9", failures=(head,))
    page = render_html("Audit", dice=[game(False, failures=(bad,))], ledger=ledger)
    assert 'class="verdict fail">FAIL — ' in page
    failures_at = page.index('id="failures"')
    assert failures_at < page.index("<h2>Dice</h2>") < page.index("<h2>Ledger")
    assert "Failures (2)" in page
    assert page.index("nonce 0") > failures_at
    assert "&quot;expected&quot;: [\n    2\n  ]" in page  # the record, as JSON


def test_a_report_with_a_passing_verdict_but_a_listed_failure_fails() -> None:
    """A failure found record by record is never hidden behind the audit's PASS."""
    page = render_html("Audit", dice=[game()], extra_failures=[Failure("x", "y")])
    assert 'class="verdict fail"' in page


def test_hostile_text_in_records_is_shown_not_run() -> None:
    evil = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    outcome = OutcomeRow(0, "roll", 1, 6, (1,), purpose=evil, note=evil)
    g = DiceGame(evil, False, evil, evil, evil, (evil,), evil, 1, (outcome,),
                 (Failure(evil, evil, {"x": evil}),))  # fmt: skip
    entry = EntryRow(1, evil, 1, evil, 0, (PostingRow(evil, 1, evil),), "00", evil)
    ledger = LedgerAudit(False, evil, evil, evil, (HeadRow(1, evil, 0, evil, False),), (entry,))
    page = render_html(evil, dice=[g], ledger=ledger, extra_failures=[Failure(evil, evil)])
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page
