"""Events and commands to plain JSON-able dicts and back, by reflection over dataclasses.

The wire format of a game event in the log is `{"type": ClassName, ...fields}` with tuples as
lists, frozensets as sorted lists, enums by value and nested dataclasses as dicts. It is
deterministic (same object, same bytes) so an auditor in any language can read and hash it.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Iterable
from enum import Enum
from functools import cache
from typing import Any, Union

from boulevard.games.base import OMITTED_AT_DEFAULT, PLATFORM_EVENTS, ChanceResolved, RulesError
from boulevard.games.upcasting import upcast

JSON = Any


def to_plain(value: Any) -> JSON:
    """`value` as plain JSON-able data: a dataclass as a dict of its fields (those added
    later, OMITTED_AT_DEFAULT, only when not at their default), an enum by its value, a
    tuple or list as a list, a set as a sorted list, a dict as sorted [key, value] pairs;
    anything else as it is."""
    tp = type(value)
    encode = _ENCODERS.get(tp)
    if encode is None:
        encode = _ENCODERS[tp] = _encoder(tp)
    return encode(value)


# The encoder of each Python type, chosen once per type: `to_plain` runs on every event
# appended and every snapshot, and testing each value against dataclass, Enum, tuple | list,
# ... in turn cost several times the encoding itself (issue 28). The type decides the
# encoding (isinstance on a value is issubclass on its type), so the output is the same.
_ENCODERS: dict[type, Callable[[Any], JSON]] = {}


def _encoder(tp: type) -> Callable[[Any], JSON]:
    if dataclasses.is_dataclass(tp):
        plain, added = _plain_fields(tp)

        def encode_dataclass(value: Any) -> JSON:
            out = {name: to_plain(getattr(value, name)) for name in plain}
            for name, default in added:
                field_value = getattr(value, name)
                if field_value != default:
                    out[name] = to_plain(field_value)
            return out

        return encode_dataclass
    if issubclass(tp, Enum):
        return _enum_value
    if issubclass(tp, tuple | list):
        return _as_list
    if issubclass(tp, frozenset | set):
        return _as_sorted_list
    if issubclass(tp, dict):
        return _as_pairs
    return _as_is


def _enum_value(value: Enum) -> JSON:
    return value.value


def _as_list(value: Iterable[Any]) -> JSON:
    return [to_plain(v) for v in value]


def _as_sorted_list(value: Iterable[Any]) -> JSON:
    return sorted((to_plain(v) for v in value), key=_sort_key)


def _as_pairs(value: dict[Any, Any]) -> JSON:
    return [[to_plain(k), to_plain(v)] for k, v in sorted(value.items(), key=_item_key)]


def _as_is(value: Any) -> JSON:
    return value


@cache
def _plain_fields(cls: type) -> tuple[tuple[str, ...], tuple[tuple[str, Any], ...]]:
    """A dataclass's fields always encoded, and those added later (OMITTED_AT_DEFAULT) with
    their defaults: worked out once per class (encoding is on every append's path)."""
    fields = dataclasses.fields(cls)
    plain = tuple(f.name for f in fields if not f.metadata.get(OMITTED_AT_DEFAULT))
    added = tuple((f.name, f.default) for f in fields if f.metadata.get(OMITTED_AT_DEFAULT))
    return plain, added


def _sort_key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def _item_key(kv: tuple[Any, Any]) -> str:
    return _sort_key(to_plain(kv[0]))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _fields_of(cls: type) -> tuple[tuple[str, Any], ...]:
    """A dataclass's (field name, type) pairs, worked out once per class: decoding folds
    every event of a game's log through here (a rebuild reads them all)."""
    hints = _hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


@cache
def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def from_plain(tp: Any, data: JSON) -> Any:
    """Rebuild a value of type `tp` from what `to_plain` made."""
    # The commonest types first (each check below is independent of the others' order).
    if tp is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise TypeError(f"expected an integer, got {data!r}")
        return data
    if tp is str:
        if not isinstance(data, str):
            raise TypeError(f"expected a string, got {data!r}")
        return data
    if _is_dataclass_type(tp):
        return tp(
            **{name: from_plain(hint, data[name]) for name, hint in _fields_of(tp) if name in data}
        )
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if data is None:
            return None
        if len(args) == 1:
            return from_plain(args[0], data)
        for a in args:  # first that fits
            try:
                return from_plain(a, data)
            except (TypeError, ValueError, KeyError):
                continue
        raise ValueError(f"no member of {tp} fits {data!r}")
    if origin is typing.Literal:
        if data not in typing.get_args(tp):
            raise ValueError(f"{data!r} is not one of {typing.get_args(tp)}")
        return data
    if origin is tuple:
        members = typing.get_args(tp)
        if len(members) == 2 and members[1] is Ellipsis:
            return tuple(from_plain(members[0], v) for v in data)
        return tuple(from_plain(a, v) for a, v in zip(members, data, strict=True))
    if origin is frozenset:
        (arg,) = typing.get_args(tp)
        return frozenset(from_plain(arg, v) for v in data)
    if origin is dict or origin is typing.Mapping:
        kt, vt = typing.get_args(tp)
        return {from_plain(kt, k): from_plain(vt, v) for k, v in data}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(data)
    if tp is bool:
        if not isinstance(data, bool):
            raise TypeError(f"expected true/false, got {data!r}")
        return data
    if tp is float:
        return float(data)
    if tp is type(None):
        return None
    raise TypeError(f"cannot decode type {tp!r}")


class Codec:
    """Encodes and decodes one game's events (or commands) by class name."""

    def __init__(self, classes: Iterable[type]) -> None:
        self._by_name: dict[str, type] = {}
        for cls in (*classes, ChanceResolved, *PLATFORM_EVENTS):
            self._by_name[cls.__name__] = cls

    def type_name(self, obj: object) -> str:
        name = type(obj).__name__
        if name not in self._by_name:
            raise TypeError(f"{name} is not a known type of this codec")
        return name

    def encode(self, obj: object) -> dict[str, JSON]:
        return {"type": self.type_name(obj), **to_plain(obj)}

    def decode(self, data: dict[str, JSON]) -> Any:
        """Decode one object; malformed input raises RulesError('malformed', …)."""
        if not isinstance(data, dict) or "type" not in data:
            raise RulesError("malformed", "expected an object with a 'type' field")
        cls = self._by_name.get(data["type"])
        if cls is None:
            raise RulesError("malformed", f"unknown type {data['type']!r}")
        try:
            return from_plain(cls, {k: v for k, v in data.items() if k != "type"})
        except (TypeError, ValueError, KeyError) as exc:
            raise RulesError("malformed", f"bad {data['type']}: {exc}") from exc

    def dumps(self, obj: object) -> bytes:
        return json.dumps(self.encode(obj), sort_keys=True, separators=(",", ":")).encode()

    def load_stored(self, payload: bytes, schema_version: int) -> Any:
        """Decode a payload as stored in an envelope of `schema_version`, upcast to today's
        schema first (boulevard.games.upcasting). The audit reads more strictly
        (`read_stored`: canonical at its schema, one value per key)."""
        try:
            data = json.loads(payload)
        except ValueError as exc:
            raise RulesError("malformed", f"not JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise RulesError("malformed", "expected an object with a 'type' field")
        return self.decode(upcast(data, schema_version))

    def loads(self, raw: bytes | str) -> Any:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RulesError("malformed", f"not JSON: {exc}") from exc
        return self.decode(data)
