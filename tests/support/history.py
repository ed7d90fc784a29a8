"""The history checker: what clients were told during a fault run, against what the
platform holds afterwards.

During a run every client records what it was told (`Acknowledged`: the events a
SubmitAction answered with and the receipt's version and chain head; `LedgerSeen`: ledger
entries it read). After the run the test reads the final state (every game's log as
stored, its pure replay, the engine's answer, the ledger's entries, the audits) into a
`FinalState`, and `check` lists every way the two disagree:

- `lost`: an acknowledged event is not in the final log at the version it was told;
- `moved`: it is there, but at another version than its receipt names;
- `duplicated_event`: one event id is stored at two versions;
- `version_conflict`: a version holds two different events (two appends both accepted);
- `gap`: the log's versions do not run 1..N;
- `receipt_mismatch`: a receipt's chain head is not the chain hash the log holds there;
- `divergent_replay`: the engine's state differs from the pure replay of the log (their
  `state_digest`s: version, status, seats to act, every seat's view and the spectator's);
- `unposted` / `duplicated_posting` / `unexplained_posting`: a money-moving event the
  ledger did not post, posted more than once, or a posting no event explains;
- `ledger_seen_lost`: an entry a client saw is not in the final ledger;
- `audit_failed`: a game's audit did not pass;
- `stuck`: a game neither finished nor playable.

Pure code (no I/O, clock or randomness): the fault tests feed it, and tests/unit/faults
feed it doctored histories to show each check catches what it names.
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum


def state_digest(version: int, status: str, to_act: Sequence[int], views: Sequence[bytes]) -> bytes:
    """A digest of one game's state as a client sees it: its version, status, the seats to
    act, and each view (the serialized GameView of the spectator, then of every seat).
    The fault test computes it twice: from the engine's GetGame answers, and from a pure
    fold of the stored log rendered the way the engine renders; `divergent_replay` is
    their difference. Each part is length-prefixed, so no two states share a digest by
    running one part into the next."""
    h = hashlib.sha256(b"boulevard.faults.state.v1")
    parts = [str(version).encode(), status.encode(), ",".join(map(str, to_act)).encode()]
    for part in [*parts, *views]:
        h.update(len(part).to_bytes(8, "big") + part)
    return h.digest()


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """A SubmitAction answered OK: the events it returned (id, version) and its receipt."""

    game_id: str
    events: tuple[tuple[str, int], ...]  # (event_id, version)
    receipt_version: int
    receipt_chain_head: bytes = b""  # empty: the client kept no chain head


@dataclass(frozen=True, slots=True)
class LedgerSeen:
    """A ledger entry a client read: the game event it posts."""

    game_id: str
    version: int


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One envelope of a game's final log, as stored."""

    version: int
    event_id: str
    chain_hash: bytes = b""
    moves_money: bool = False  # it carries transfers: the ledger must post it once


class Status(Enum):
    FINISHED = "finished"
    PLAYABLE = "playable"  # not finished, someone may act (legal actions exist)
    STUCK = "stuck"  # not finished and nobody can act


@dataclass(frozen=True, slots=True)
class GameFinal:
    """What the platform holds of one game after the run."""

    log: tuple[StoredEvent, ...]
    engine_version: int
    engine_state: bytes  # `state_digest` of the engine's answers
    replay_version: int
    replay_state: bytes  # `state_digest` of a pure fold of `log`
    status: Status
    audit_ok: bool = True
    audit_summary: str = ""


@dataclass(frozen=True, slots=True)
class FinalState:
    games: Mapping[str, GameFinal]
    postings: Sequence[tuple[str, int]]  # (game_id, version) of every ledger entry


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    game_id: str
    detail: str


@dataclass(frozen=True, slots=True)
class Report:
    violations: tuple[Violation, ...]
    games: int
    acknowledged_events: int
    postings: int
    counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def of(self, kind: str) -> list[Violation]:
        return [v for v in self.violations if v.kind == kind]

    def describe(self, limit: int = 20) -> str:
        head = (
            f"{self.games} games, {self.acknowledged_events} acknowledged events, "
            f"{self.postings} postings: "
        )
        if self.ok:
            return head + "no violation"
        lines = [f"{v.kind} {v.game_id}: {v.detail}" for v in self.violations[:limit]]
        more = len(self.violations) - limit
        return (
            head
            + f"{len(self.violations)} violations\n"
            + "\n".join(lines + ([f"... and {more} more"] if more > 0 else []))
        )


def check(
    acknowledged: Iterable[Acknowledged],
    final: FinalState,
    ledger_seen: Iterable[LedgerSeen] = (),
) -> Report:
    """Every way the final state disagrees with what clients were told (module docstring)."""
    out: list[Violation] = []
    acks = list(acknowledged)

    def bad(kind: str, game_id: str, detail: str) -> None:
        out.append(Violation(kind, game_id, detail))

    # The logs themselves: versions 1..N, one event per version, each event once.
    where: dict[str, dict[str, list[int]]] = {}
    at: dict[str, dict[int, StoredEvent]] = {}
    for game_id, game in sorted(final.games.items()):
        by_id: dict[str, list[int]] = defaultdict(list)
        by_version: dict[int, StoredEvent] = {}
        for e in game.log:
            by_id[e.event_id].append(e.version)
            held = by_version.get(e.version)
            if held is not None and held.event_id != e.event_id:
                bad("version_conflict", game_id,
                    f"version {e.version} holds {held.event_id} and {e.event_id}")  # fmt: skip
            by_version.setdefault(e.version, e)
        for event_id, versions in by_id.items():
            if len(versions) > 1:
                bad("duplicated_event", game_id, f"{event_id} at versions {sorted(versions)}")
        if sorted(by_version) != list(range(1, len(by_version) + 1)):
            missing = sorted(set(range(1, max(by_version, default=0) + 1)) - set(by_version))
            bad("gap", game_id, f"versions missing: {missing[:10]}")
        where[game_id], at[game_id] = by_id, by_version
        if (game.engine_version, game.engine_state) != (game.replay_version, game.replay_state):
            bad("divergent_replay", game_id,
                f"engine at version {game.engine_version}, replay at {game.replay_version}"
                + ("" if game.engine_state == game.replay_state else
                   "; states differ"))  # fmt: skip
        if not game.audit_ok:
            bad("audit_failed", game_id, game.audit_summary or "the audit did not pass")
        if game.status is Status.STUCK:
            bad("stuck", game_id, f"not finished and nobody can act at version {len(game.log)}")

    # What the clients were told.
    acknowledged_events = 0
    for ack in acks:
        by_id, by_version = where.get(ack.game_id), at.get(ack.game_id)
        if by_id is None or by_version is None:
            bad("lost", ack.game_id, "an acknowledged game is not in the final state at all")
            continue
        for event_id, version in ack.events:
            acknowledged_events += 1
            stored_at = by_id.get(event_id, [])
            if not stored_at:
                bad("lost", ack.game_id, f"acknowledged {event_id} at version {version}")
            elif version not in stored_at:
                bad("moved", ack.game_id,
                    f"{event_id} acknowledged at {version}, stored at {stored_at}")  # fmt: skip
        if ack.receipt_chain_head:
            stored = by_version.get(ack.receipt_version)
            if stored is None or stored.chain_hash != ack.receipt_chain_head:
                bad("receipt_mismatch", ack.game_id,
                    f"the receipt for version {ack.receipt_version} names a chain head the "
                    "log does not hold there")  # fmt: skip

    # The ledger against the games: every money-moving event posted exactly once.
    posted = Counter(final.postings)
    for (game_id, version), n in sorted(posted.items()):
        if n > 1:
            bad("duplicated_posting", game_id, f"version {version} posted {n} times")
        stored = at.get(game_id, {}).get(version)
        if stored is None or not stored.moves_money:
            bad("unexplained_posting", game_id, f"version {version} moves no money in the log")
    for game_id, by_version in sorted(at.items()):
        for version, e in sorted(by_version.items()):
            if e.moves_money and not posted[(game_id, version)]:
                bad("unposted", game_id,
                    f"version {version} ({e.event_id}) is not in the ledger")  # fmt: skip
    for seen in ledger_seen:
        if not posted[(seen.game_id, seen.version)]:
            detail = f"a client saw the entry for version {seen.version}; the ledger lost it"
            bad("ledger_seen_lost", seen.game_id, detail)

    return Report(
        violations=tuple(out),
        games=len(final.games),
        acknowledged_events=acknowledged_events,
        postings=len(final.postings),
        counts=dict(Counter(v.kind for v in out)),
    )
