"""A game id becomes a NATS subject token: a trailing newline must not pass the check (`$`
in a regex matches before a final newline; found by the fuzz test as a BadSubjectError)."""

from __future__ import annotations

import pytest

from boulevard.eventlog.errors import InvalidStreamId
from boulevard.platform.errors import InvalidArgument
from services.dice.dealer import check_game_id


@pytest.mark.parametrize("bad", ["g1\n", "g 1", "", "g.1", "x" * 129])
def test_dice_refuses_a_game_id_that_is_no_subject_token(bad: str) -> None:
    with pytest.raises(InvalidArgument):
        check_game_id(bad)


def test_the_event_store_refuses_a_stream_id_with_a_trailing_newline() -> None:
    from boulevard.eventlog.store import check_stream_id

    with pytest.raises(InvalidStreamId):
        check_stream_id("g1\n")
    check_stream_id("g1")
