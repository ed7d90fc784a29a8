"""Splitting a bursts-mode WatchGame update into the per-event updates the CLI reads."""

from __future__ import annotations

from boulevard.api.v1 import engine_pb2, events_pb2
from boulevard.seats.watching import last_event, split


def envelope(version: int) -> events_pb2.EventEnvelope:
    return events_pb2.EventEnvelope(version=version, type=f"E{version}")


def test_a_burst_becomes_one_update_per_event_with_the_view_on_the_last() -> None:
    burst = engine_pb2.WatchGameResponse(
        events=[envelope(3), envelope(4), envelope(5)],
        view=engine_pb2.GameView(rendered="board"),
        to_act=[1],
        legal_actions=[engine_pb2.Action()],
    )
    out = split(burst)
    assert [u.event.version for u in out] == [3, 4, 5]
    assert [u.HasField("view") for u in out] == [False, False, True]
    assert out[-1].view.rendered == "board" and list(out[-1].to_act) == [1]
    assert len(out[-1].legal_actions) == 1
    assert not any(u.to_act or u.legal_actions or u.events for u in out[:-1])
    assert last_event(burst).version == 5


def test_a_catch_up_chunk_without_a_view_gives_no_view() -> None:
    out = split(engine_pb2.WatchGameResponse(events=[envelope(1), envelope(2)]))
    assert [u.HasField("view") for u in out] == [False, False]


def test_an_update_of_one_event_passes_through() -> None:
    single = engine_pb2.WatchGameResponse(event=envelope(7), to_act=[0])
    assert split(single) == [single]
    assert last_event(single).version == 7
