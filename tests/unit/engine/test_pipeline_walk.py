"""The walk of one SubmitAction through the engine, as docs/architecture.md ("One command
pipeline") prints it: the functions of services/engine/ that `Engine.handle` opens, in the
order it first opens them, recorded with `sys.setprofile`, must be the table's rows after
the server's; and each file must be entered once. A step moved to another file, or a new
function on the path, fails here until the table says so."""

from __future__ import annotations

import functools
import random
import re
import sys
from pathlib import Path
from types import FrameType

from boulevard.contract.mapping import command_to_action
from boulevard.eventlog.store import InMemoryEventStore
from boulevard.platform.auth import verify_token
from services.engine.chance import LocalChance
from services.engine.commands import Submit
from services.engine.engine import Engine, MemoryKeyValue
from tests.unit.engine.test_engine_core import KEY, SEAT_KEYS, first_legal, seats

REPO = Path(__file__).resolve().parents[3]
ENGINE = REPO / "services" / "engine"
DOC = REPO / "docs" / "architecture.md"
# Left out of the count, as the doc says: the cache, clock and metrics bookkeeping, the
# command's attributes, and the codec's cache (every other primitive lives outside
# services/engine/, which is all this walk records).
LEFT_OUT = {
    "Engine._lock",
    "Engine._used",
    "Engine._kept",
    "Engine._cache",
    "Engine._track_clock",
    "Session.next_clock_due",
    "_count_appended",
    "Engine.<lambda>",  # the engine's clock
    "Submit.causation",
    "codec_of",
    "Session.memo",  # the per-version cache (what the rules owe, legal commands, views)
    "Session.outcome",  # the game's outcome at a version, through that cache
}


def documented_walk() -> list[tuple[str, str]]:
    """(file, function) per step of the doc's table, in order."""
    section = DOC.read_text().split("## One command pipeline", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| [\d–]+ \| (\S+) \| (.+) \|$", section, re.MULTILINE)
    assert rows, "docs/architecture.md has no walk table under 'One command pipeline'"
    return [(file, name) for file, names in rows for name in re.findall(r"`([^`]+)`", names)]


def record(opened: list[tuple[str, str]], frame: FrameType, event: str, _arg: object) -> None:
    """A profile hook's step: note a function of services/engine/ when first called."""
    path = Path(frame.f_code.co_filename)
    if event == "call" and path.parent == ENGINE:
        step = (path.name, frame.f_code.co_qualname)
        if step not in opened and "<locals>" not in step[1]:
            opened.append(step)


async def traced_submit() -> list[tuple[str, str]]:
    """The functions of services/engine/ one SubmitAction's pipeline opens (a cached game
    without a clock, a move that asks for no chance), in the order first opened."""
    engine = Engine(InMemoryEventStore(), LocalChance(random.Random(7)), MemoryKeyValue(), KEY)
    created = await engine.create_game("m", "lords_of_vegas", seats(2), match_id="m")
    for attempt in range(20):
        session = await engine.load("m")
        seat, command = first_legal(session)
        claims = verify_token(KEY, created.tokens[seat])
        action = command_to_action(session.game, command)
        signed = action.SerializeToString(deterministic=True)
        key = f"k{attempt}"
        signature = SEAT_KEYS[seat].sign_command("m", seat, session.version, key, signed)
        # As the server builds it from a SubmitActionRequest.
        submit = Submit("m", claims, session.version, key, signed, signature, action=action)
        opened: list[tuple[str, str]] = []

        sys.setprofile(functools.partial(record, opened))
        try:
            await engine.handle(submit)
        finally:
            sys.setprofile(None)
        if ("chance.py", "LocalChance.resolve") not in opened:
            return [step for step in opened if step[1] not in LEFT_OUT]
    raise AssertionError("no move without chance in 20: pick another game for the walk")


async def test_a_submit_action_walks_the_documented_steps_entering_each_file_once() -> None:
    documented = documented_walk()
    assert documented[0] == ("server.py", "EngineServicer.SubmitAction")
    walk = await traced_submit()
    assert walk == documented[1:]
    files = [file for file, _ in documented]
    entered = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(entered) == len(set(entered)), f"a file entered twice: {entered}"
    assert len(documented) <= 12 and len(entered) <= 6  # issue 26's aim
