"""`audit game`, the rules part: re-decide a game with the rules its log names, and read each
stored payload as the schema it was written with (docs/auditing.md, "Which rules").

- The rules: `GameCreated.rules_version` pins them (boulevard.games.versions). The audit
  uses exactly that version; when this auditor does not host it, the audit fails at
  version 1 naming the version — it never re-decides a game with other rules.
- The payloads: each envelope's `schema_version` says which schema its payload was written
  with; the payload must be the canonical JSON of its event at that schema, and is upcast
  to today's (boulevard.games.upcasting) before it is compared with what the rules give.
"""

from __future__ import annotations

from typing import Any

from boulevard.games.base import GameCreated, GameDefinition, RulesError
from boulevard.games.codec import Codec
from boulevard.games.upcasting import SCHEMA_VERSION, canonical, read_stored
from boulevard.games.versions import RulesVersion, UnknownRulesVersion, rules_for


class RulesCheckFailed(Exception):
    """A payload or a rules version the audit cannot accept; the caller names the version."""


def recorded_rules(created: GameCreated) -> RulesVersion:
    """The rules the game names, or RulesCheckFailed saying which and what this has."""
    try:
        return rules_for(created.game, created.rules_version)
    except UnknownRulesVersion as err:
        raise RulesCheckFailed(
            f"{err}: audit it with the auditor of the release that has this version "
            "(libs/boulevard/games/releases.json lists each release's commit)"
        ) from None


def stored_event(codec: Codec, payload: bytes, schema_version: int) -> tuple[Any, bytes]:
    """(the event, its bytes at today's schema) of a stored payload. The payload must be
    canonical at its own schema and decode, after upcasting, to exactly today's fields:
    one event, one byte string, in every schema."""
    try:
        if schema_version == SCHEMA_VERSION:
            # Today's schema: the payload must be exactly today's encoding of its event.
            event, today = codec.loads(payload), payload
        else:
            # Canonical at its own schema (read_stored), then upcast: compared as today's.
            plain = read_stored(payload, schema_version)
            event, today = codec.decode(plain), canonical(plain)
    except RulesError as err:
        raise RulesCheckFailed(f"undecodable payload: {err.message}") from None
    if codec.dumps(event) != today:
        # Duplicate or unknown keys, or another layout, could make a reader in another
        # language see another event than this audit.
        raise RulesCheckFailed(
            f"the payload is not the canonical JSON of the {type(event).__name__} it "
            f"decodes to at schema {schema_version} (keys sorted, each once, no others, "
            "no whitespace)"
        )
    return event, today


def codec_of(game: GameDefinition[Any, Any, Any, Any]) -> Codec:
    return Codec((*game.event_types, *game.command_types))
