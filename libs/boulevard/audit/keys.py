"""The platform's keys over time, as auditors pin them (docs/auditing.md, "Pinned keys").
Pure: no I/O.

A key history is a JSON document listing, per role, every public key the platform has used
in order, each new key signed by the one before it of the same role:

    {"type": "boulevard.key_history.v1",
     "keys": [{"role": "engine", "public_key": hex, "since_unix_ms": n, "signature": hex}, …]}

`signature` is the previous key's Ed25519 signature over `entry_signing_bytes(role,
public_key, since_unix_ms, previous)` (empty for a role's first key). An auditor who kept a
history accepts a later one only if it extends the kept one, and an audit run with
`--trust FILE` fails on any key the services present that is not in it: the operator cannot
swap a key for a fresh one of its own without the old key's signature, and a key it never
published fails the audit.

The platform serves its history (GetEngineKeyResponse.key_history); an audit trusts the
served one only as far as it extends the pinned one (`trusted_history`), so a rotation after
the pin is followed, and a rewritten history is caught.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boulevard.audit.signing import SigningKey, key_id, parse_public_key, verify

HISTORY_TYPE = "boulevard.key_history.v1"
ENTRY_TYPE = "boulevard.key_history.entry.v1"
ROLES = ("engine", "dice", "ledger", "bots")  # receipts, the dice log, the ledger, bot seats


def entry_signing_bytes(role: str, public_key: str, since_unix_ms: int, previous: str) -> bytes:
    """What the previous key of `role` signs to hand over to `public_key`."""
    body = {
        "type": ENTRY_TYPE,
        "role": role,
        "public_key": public_key,
        "since_unix_ms": since_unix_ms,
        "previous": previous,
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class KeyEntry:
    role: str
    public_key: str  # 64 lowercase hex digits
    since_unix_ms: int
    signature: str = ""  # hex; "" for a role's first key

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "public_key": self.public_key,
            "since_unix_ms": self.since_unix_ms,
            "signature": self.signature,
        }


@dataclass
class KeyHistory:
    entries: list[KeyEntry] = field(default_factory=list)

    def keys(self, role: str) -> list[str]:
        """The role's public keys, oldest first."""
        return [e.public_key for e in self.entries if e.role == role]

    def key_ids(self, role: str) -> set[str]:
        return {key_id(bytes.fromhex(k)) for k in self.keys(role)}

    def current(self, role: str) -> str:
        keys = self.keys(role)
        return keys[-1] if keys else ""

    def extended(
        self, role: str, new: str, since_unix_ms: int, previous: SigningKey | None
    ) -> KeyHistory:
        """This history with `new` as `role`'s next key, signed by `previous` (the role's
        current key's private half; None for the role's first key). Unchanged when `new` is
        the role's current key already. ValueError when `previous` is not the current key."""
        current = self.current(role)
        if new == current:
            return self
        if (previous.public_hex if previous else "") != current:
            raise ValueError(
                f"the {role} key {new} must be signed by the current one ({current or 'none'})"
            )
        signature = (
            previous.sign(entry_signing_bytes(role, new, since_unix_ms, current)).hex()
            if previous
            else ""
        )
        return KeyHistory([*self.entries, KeyEntry(role, new, since_unix_ms, signature)])

    def problem(self) -> str | None:
        """What is wrong with the history (None: every key is signed by its predecessor)."""
        previous: dict[str, str] = {}
        since: dict[str, int] = {}
        for i, e in enumerate(self.entries):
            if e.role not in ROLES:
                return f"entry {i}: unknown role {e.role!r}"
            try:
                parse_public_key(e.public_key)
            except ValueError as err:
                return f"entry {i}: {err}"
            before = previous.get(e.role, "")
            if e.since_unix_ms < since.get(e.role, 0):
                return f"entry {i}: the {e.role} key's time goes back"
            if before:
                message = entry_signing_bytes(e.role, e.public_key, e.since_unix_ms, before)
                try:
                    signature = bytes.fromhex(e.signature)
                except ValueError:
                    signature = b""
                if not verify(bytes.fromhex(before), signature, message):
                    return (
                        f"entry {i}: the {e.role} key {e.public_key} is not signed by the "
                        f"key before it ({before})"
                    )
            elif e.signature:
                return f"entry {i}: a role's first key carries no signature"
            previous[e.role] = e.public_key
            since[e.role] = e.since_unix_ms
        return None

    def extends(self, older: KeyHistory) -> bool:
        """Whether this history keeps every entry of `older`, in order, and adds after."""
        return self.entries[: len(older.entries)] == older.entries

    def to_json(self) -> dict[str, Any]:
        return {"type": HISTORY_TYPE, "keys": [e.to_json() for e in self.entries]}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def loads(cls, text: str) -> KeyHistory:
        """Raises ValueError (or KeyError) on a document that is not a key history."""
        data = json.loads(text)
        if data.get("type") != HISTORY_TYPE:
            raise ValueError(f"not a key history (type {data.get('type')!r})")
        return cls(
            [
                KeyEntry(
                    str(e["role"]),
                    str(e["public_key"]),
                    int(e["since_unix_ms"]),
                    str(e.get("signature", "")),
                )
                for e in data["keys"]
            ]
        )


def key_history_path(data_dir: Path) -> Path:
    """Where `boulevard keys history` writes the platform's history by default, and where
    the engine reads the one it serves (GetEngineKeyResponse.key_history)."""
    return data_dir / "keys" / "history.json"


class HistoryRewritten(ValueError):
    """The platform serves a key history that does not verify, or that drops or changes an
    entry of the one an auditor pinned: its keys are not the ones it published before."""


def trusted_history(pinned: KeyHistory | None, served: KeyHistory | None) -> KeyHistory | None:
    """The key history an audit trusts, given the one an auditor pinned (`--trust`) and the
    one the platform serves: the served one when it verifies and keeps every pinned entry
    (so a key rotated in after the pin, signed by a pinned key, is trusted too); the pinned
    one when nothing is served; None when neither exists. Raises HistoryRewritten when the
    served history does not verify or is not an extension of the pinned one — an operator
    swapping a key of its own in, however well it chains the swap from there on."""
    if served is not None:
        problem = served.problem()
        if problem:
            raise HistoryRewritten(f"the platform's key history does not verify: {problem}")
    if pinned is None or served is None:
        return served if served is not None else pinned
    if not served.extends(pinned):
        common = min(len(pinned.entries), len(served.entries))
        at = next((i for i in range(common) if pinned.entries[i] != served.entries[i]), common)
        was = pinned.entries[at] if at < len(pinned.entries) else None
        now = served.entries[at] if at < len(served.entries) else None
        raise HistoryRewritten(
            f"the platform's key history rewrites the pinned one at entry {at}: pinned "
            f"{_described(was)}, served {_described(now)}"
        )
    return served


def _described(entry: KeyEntry | None) -> str:
    return f"the {entry.role} key {entry.public_key}" if entry else "nothing"


def untrusted(history: KeyHistory, role: str, public_key: str) -> str | None:
    """Why `public_key` (hex), presented for `role`, fails a pinned history; None if it is
    one of the role's keys."""
    if public_key in history.keys(role):
        return None
    return (
        f"the {role} key {public_key} is not in the pinned key history "
        f"({len(history.keys(role))} {role} key(s) there)"
    )
