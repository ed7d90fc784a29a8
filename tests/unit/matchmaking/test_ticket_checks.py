"""Ids that reach a KV key or a NATS subject are checked first: a malformed one is the
caller's mistake (INVALID_ARGUMENT), never the store's (the fuzz test found GetMatch with
an empty id answering INTERNAL from the KV layer)."""

from __future__ import annotations

import pytest

from boulevard.platform.errors import InvalidArgument
from services.matchmaking.matchmaker import new_match_id
from services.matchmaking.ticket_checks import check_match_id


def test_a_match_id_the_matchmaker_makes_passes() -> None:
    check_match_id(new_match_id())
    check_match_id("g-1_a")


@pytest.mark.parametrize("bad", ["", "m.1", "m 1", "m*", "m>", "é", "m" * 65])
def test_a_malformed_match_id_is_the_callers_error(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="match_id"):
        check_match_id(bad)
