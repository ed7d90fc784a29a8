"""Stored events grow up without being rewritten: schema versions and a chain of upcasters.

Every envelope the engine appends names the schema its payload was written with
(`EventEnvelope.schema_version`; 0, the field's absence, on every envelope written before it
existed). The stored bytes are never changed — the chain hash and the signatures cover them.
Instead, a reader turns an old payload into today's shape before the rules see it: each
`Upcaster` takes the payloads of one event type from schema `n` to `n + 1`, as plain JSON
(the dicts `boulevard.games.codec` reads), and `upcast` runs the chain from the payload's
schema to `SCHEMA_VERSION`.

Adding an event type needs no upcaster (old logs hold none). Adding a field to an existing
event needs one step that gives old payloads the field's value in their time (usually its
default): the audit holds each payload to be the canonical JSON of its event at its own
schema, so an old payload lacking a field today's encoding writes fails unless a step adds
it. Renaming or reshaping a field is a step too. Steps never depend on anything but the
payload: pure, so an auditor re-runs the same chain.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from boulevard.games.base import RulesError

Plain = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Upcaster:
    """Turns one event type's payloads of schema `to_schema - 1` into schema `to_schema`."""

    to_schema: int
    event_type: str
    step: Callable[[Plain], Plain]
    why: str


def add_field(name: str, value: Any) -> Callable[[Plain], Plain]:
    """A step that gives a payload a field it did not have yet, with the value it meant
    then. A payload that already has it was not written at the older schema: refused."""

    def step(plain: Plain) -> Plain:
        if name in plain:
            raise RulesError(
                "malformed", f"field {name!r} is there, but its schema predates the field"
            )
        return {**plain, name: value}

    return step


# The schema each new envelope is written with. Raise it with the step(s) that take the
# previous schema's payloads here; never change or remove a step (old logs need them).
SCHEMA_VERSION = 1

UPCASTERS: tuple[Upcaster, ...] = (
    Upcaster(
        1,
        "GameCreated",
        add_field("rules_version", ""),
        "games before rules were pinned: the empty version is version 1 of their game",
    ),
)


def _chain(upcasters: tuple[Upcaster, ...]) -> Mapping[tuple[int, str], Upcaster]:
    chain: dict[tuple[int, str], Upcaster] = {}
    for u in upcasters:
        if not 1 <= u.to_schema <= SCHEMA_VERSION or (u.to_schema, u.event_type) in chain:
            raise ValueError(f"upcaster to schema {u.to_schema} of {u.event_type} is misplaced")
        chain[(u.to_schema, u.event_type)] = u
    return chain


_CHAIN = _chain(UPCASTERS)


def upcast(plain: Plain, schema: int) -> Plain:
    """`plain` (an event with its "type") written at `schema`, as schema SCHEMA_VERSION
    reads it. A schema newer than this code knows is refused: it was written by a later
    release, whose meaning this code cannot know."""
    if not 0 <= schema <= SCHEMA_VERSION:
        raise RulesError(
            "unknown_schema",
            f"payload schema {schema}: this build reads schemas 0..{SCHEMA_VERSION} "
            "(written by a newer release?)",
        )
    event_type = plain.get("type")
    for to_schema in range(schema + 1, SCHEMA_VERSION + 1):
        u = _CHAIN.get((to_schema, str(event_type)))
        if u is not None:
            plain = u.step(plain)
    return plain


def canonical(plain: Plain) -> bytes:
    """The one byte string of a plain event (what `Codec.dumps` writes)."""
    return json.dumps(plain, sort_keys=True, separators=(",", ":")).encode()


def read_stored(payload: bytes, schema: int) -> Plain:
    """A stored payload as today's plain event: held to be canonical JSON at its own schema
    (which also refuses a key given twice: its canonical form has it once), then upcast.
    RulesError('malformed', …) else."""
    try:
        plain = json.loads(payload)
    except ValueError as exc:
        raise RulesError("malformed", f"not JSON: {exc}") from exc
    if not isinstance(plain, dict):
        raise RulesError("malformed", "expected an object with a 'type' field")
    if canonical(plain) != payload:
        raise RulesError("malformed", "not canonical JSON (keys sorted, no whitespace)")
    return upcast(plain, schema)
