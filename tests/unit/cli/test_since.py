"""`boulevard audit all --since`: spans back from now and ISO dates, nothing else."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from boulevard.cli.audit_game import since_unix_ms

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds_back"),
    [("30s", 30), ("90m", 5400), ("24h", 86400), ("7d", 7 * 86400), ("2w", 14 * 86400)],
)
def test_a_span_counts_back_from_now(text: str, seconds_back: int) -> None:
    assert since_unix_ms(text, NOW) == int((NOW - seconds_back) * 1000)


def test_an_iso_date_or_time_is_utc_unless_it_says_otherwise() -> None:
    midnight = datetime(2026, 11, 30, tzinfo=UTC).timestamp() * 1000
    assert since_unix_ms("2026-11-30", NOW) == midnight
    assert since_unix_ms("2026-11-30T00:00:00Z", NOW) == midnight
    assert since_unix_ms("2026-11-30T01:00:00+01:00", NOW) == midnight


@pytest.mark.parametrize("text", ["yesterday", "24", "h", "-3h", "1.5h", "", "3y", "24 h"])
def test_anything_else_is_refused_with_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match="expected a span like 24h"):
        since_unix_ms(text, NOW)
