"""The services' event loop choice (boulevard.platform.eventloop)."""

import asyncio

import pytest
import uvloop

from boulevard.platform import eventloop


async def loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_uvloop_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.EVENT_LOOP_ENV, raising=False)
    assert eventloop.run(loop_type()) is uvloop.Loop


def test_asyncio_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.EVENT_LOOP_ENV, "asyncio")
    assert eventloop.run(loop_type()) is not uvloop.Loop
    monkeypatch.setenv(eventloop.EVENT_LOOP_ENV, "uvloop")
    assert eventloop.run(loop_type()) is uvloop.Loop


def test_a_misspelt_choice_fails_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.EVENT_LOOP_ENV, "uvlop")
    with pytest.raises(ValueError, match="BOULEVARD_EVENT_LOOP"):
        eventloop.run(loop_type())
