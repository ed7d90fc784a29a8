"""Game commands and views to the engine's typed protobuf messages and back, by reflection
(compiled once per type on the way out: see `_writer`).

Protobuf stops here: the games keep their frozen dataclasses, and this one generic mapper
walks a dataclass's fields (`typing.get_type_hints`) beside the message's descriptor. Nothing
in it knows any one game; a game is wired only by naming conventions in its proto file:

- `Action.game` and `GameView.game` (engine.proto) have one field per game, named after the
  game's registry name (`lords_of_vegas`), of type `<Prefix>Action` / `<Prefix>View`, where
  `<Prefix>` is the CamelCase registry name (`LordsOfVegas`);
- `<Prefix>Action` has a `oneof command` with one field per command class, named after the
  class in snake_case (`BuildCasino` → `build_casino`), of type `<Prefix><ClassName>`;
- every other dataclass `X` is message `<Prefix>X` (not doubled when `X` already starts with
  the prefix: `LasVegasView`), and the game's `view_type` is always `<Prefix>View`;
- a field has the dataclass field's name; `X | None` is an `optional` field; tuples and
  frozensets (sorted) are `repeated`; a collection inside a collection, or an optional
  collection, is a message with a single repeated field; a fixed tuple such as
  `tuple[str, int]` is a message whose fields, in field-number order, are its members; a
  `Mapping[K, V]` is a repeated entry message of (key, value) fields, sorted by key;
- a StrEnum `E` is proto enum `<Prefix>E` (or `E` when it starts with the prefix), member
  `v` is `<ENUM_NAME_UPPER_SNAKE>_<V_UPPER>`, and 0 is `…_UNSPECIFIED`, never a valid value.

Input that does not fit (no game or command set, another game's action, an UNSPECIFIED
enum, a required message missing) raises `RulesError("malformed", …)`. A game or a class
with no message is a `ProtoMappingError`: a programming error, which `check_mapping` (run by
the drift test, and cheap enough for a service to call at start-up) finds ahead of time.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any, Union

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from boulevard.api.v1 import engine_pb2
from boulevard.games.base import GameDefinition, RulesError

AnyGame = GameDefinition[Any, Any, Any, Any]

_INTEGER_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED32,
        FieldDescriptor.TYPE_SFIXED64,
    }
)


class ProtoMappingError(TypeError):
    """A game, command or view class (or one of their fields) has no matching proto. A bug
    in the protos or the game, never the caller's fault."""


# --- names ----------------------------------------------------------------------------------


def game_prefix(game: AnyGame) -> str:
    """`lords_of_vegas` → `LordsOfVegas`: the prefix of every message of that game."""
    return "".join(part.capitalize() for part in game.name.split("_"))


def snake_case(name: str) -> str:
    """`BuildCasino` → `build_casino`: a command's field name in `<Prefix>Action`."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def message_name(game: AnyGame, cls: type) -> str:
    """The proto message (or enum) name of a game's dataclass (or enum), unqualified."""
    prefix = game_prefix(game)
    if cls is game.view_type:
        return f"{prefix}View"
    name = cls.__name__
    return name if name.startswith(prefix) else f"{prefix}{name}"


def enum_value_name(enum_desc: EnumDescriptor, member: Enum) -> str:
    """Buf style: `LordsOfVegasColour` + Colour.AQUA → `LORDS_OF_VEGAS_COLOUR_AQUA`."""
    return f"{snake_case(enum_desc.name).upper()}_{str(member.value).upper()}"


def game_view_type(game: AnyGame) -> type:
    """The dataclass a game's `view` returns (`GameDefinition.view_type`)."""
    if game.view_type is None:
        raise ProtoMappingError(f"game {game.name!r} does not declare its view_type")
    return game.view_type


# --- the descriptors of one game --------------------------------------------------------------


@dataclass(frozen=True)
class _GameProtos:
    action: FieldDescriptor  # Action.<game>
    view: FieldDescriptor  # GameView.<game>
    command_fields: Mapping[type, FieldDescriptor]  # command class → <Prefix>Action field
    command_types: Mapping[str, type]  # <Prefix>Action field name → command class


def _oneof_field(container: Descriptor, oneof: str, name: str) -> FieldDescriptor | None:
    field = container.fields_by_name.get(name)
    if field is None or field.containing_oneof is None:
        return None
    return field if field.containing_oneof.name == oneof else None


_CACHE: dict[tuple[str, tuple[type, ...], type | None], _GameProtos] = {}


def _protos(game: AnyGame) -> _GameProtos:
    key = (game.name, game.command_types, game.view_type)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = _find_protos(game)
    return found


def _find_protos(game: AnyGame) -> _GameProtos:
    prefix = game_prefix(game)
    hint = f"add protos/boulevard/v1/{game.name}.proto and a field to the oneof in engine.proto"
    action = _oneof_field(engine_pb2.Action.DESCRIPTOR, "game", game.name)
    view = _oneof_field(engine_pb2.GameView.DESCRIPTOR, "game", game.name)
    if action is None or view is None:
        raise ProtoMappingError(
            f"game {game.name!r} has no proto mapping: boulevard.v1.Action and GameView need "
            f"a field {game.name!r} in their oneof game ({hint})"
        )
    action_desc, view_desc = _message_type(action), _message_type(view)
    if action_desc.name != f"{prefix}Action":
        raise ProtoMappingError(f"Action.{game.name} must be of type {prefix}Action")
    if view_desc.name != message_name(game, game_view_type(game)):
        raise ProtoMappingError(f"GameView.{game.name} must be of type {prefix}View")
    # The game's own file (the generated module's DESCRIPTOR) holds all its messages.
    messages = action_desc.file.message_types_by_name
    command_fields: dict[type, FieldDescriptor] = {}
    for cls in game.command_types:
        name = message_name(game, cls)
        field = _oneof_field(action_desc, "command", snake_case(cls.__name__))
        if name not in messages or field is None or field.message_type is not messages[name]:
            raise ProtoMappingError(
                f"command {cls.__name__} of {game.name!r} needs message {name} and a field "
                f"`{name} {snake_case(cls.__name__)}` in {prefix}Action's oneof command"
            )
        command_fields[cls] = field
    return _GameProtos(
        action=action,
        view=view,
        command_fields=command_fields,
        command_types={f.name: cls for cls, f in command_fields.items()},
    )


# --- the four public mappings -------------------------------------------------------------


def command_to_action(game: AnyGame, command: object) -> engine_pb2.Action:
    """A game command as the engine's `Action` (e.g. for ListLegalActions)."""
    protos = _protos(game)
    field = protos.command_fields.get(type(command))
    if field is None:
        raise ProtoMappingError(f"{type(command).__name__} is not a command of {game.name!r}")
    action = engine_pb2.Action()
    message = getattr(getattr(action, game.name), field.name)
    message.SetInParent()  # a command whose fields are all defaults is still this command
    _write_dataclass(message, command)
    return action


def action_to_command(game: AnyGame, action: engine_pb2.Action) -> Any:
    """The game command an `Action` carries; anything malformed raises RulesError."""
    protos = _protos(game)
    which = action.WhichOneof("game")
    if which is None:
        raise RulesError("malformed", "the action names no game: set one field of Action.game")
    if which != game.name:
        raise RulesError("malformed", f"this is a {game.title} game, not {which}")
    game_action = getattr(action, which)
    command = game_action.WhichOneof("command")
    if command is None:
        raise RulesError("malformed", f"the {game.title} action names no command")
    cls = protos.command_types.get(command)
    if cls is None:  # a command the protos know but this build of the game does not
        raise RulesError("malformed", f"{game.title} has no command {command!r}")
    return _read_dataclass(getattr(game_action, command), cls, command)


def view_to_proto(
    game: AnyGame,
    view: object,
    like: tuple[object, engine_pb2.GameView] | None = None,
    *,
    render: bool = True,
) -> engine_pb2.GameView:
    """A seat's view as the engine's `GameView`, with its plain-text rendering (`rendered`
    left empty when `render` is False: the game's `render` is not called).

    `like`: another view of this game and the message this function made of it. When the
    two views differ in fewer than half of their top-level fields (in several games, only in
    `seat`, whose view it is), the message is a copy of that one with the differing fields
    cleared and written anew: the same message, field for field and byte for byte, as
    mapping `view` from scratch (tests/unit/contract/test_view_delta.py), at a fraction of
    the cost (issue 28: every seat's view was mapped whole at every version). The rendering
    is always made afresh (or, without `render`, cleared)."""
    protos = _protos(game)
    tp = type(view)
    if tp is not game_view_type(game):
        raise ProtoMappingError(f"{tp.__name__} is not the view type of {game.name!r}")
    if like is not None and type(like[0]) is tp:
        other, other_message = like
        writers = _field_writers(_descriptor(getattr(other_message, protos.view.name)), tp)
        changed = [n for n in writers if not _same(getattr(view, n), getattr(other, n))]
        if 2 * len(changed) < len(writers):
            result = engine_pb2.GameView()
            result.CopyFrom(other_message)
            result.rendered = game.render(view) if render else ""
            message = getattr(result, protos.view.name)
            for name in changed:
                message.ClearField(name)
                writers[name](message, getattr(view, name))
            return result
    result = engine_pb2.GameView(rendered=game.render(view) if render else "")
    message = getattr(result, protos.view.name)
    message.SetInParent()
    _write_dataclass(message, view)
    return result


def _same(a: object, b: object) -> bool:
    return a is b or a == b


def proto_to_view(game: AnyGame, view: engine_pb2.GameView) -> Any:
    """The game's view dataclass a `GameView` carries (for clients and bots)."""
    protos = _protos(game)
    which = view.WhichOneof("game")
    if which is None:
        raise RulesError("malformed", "the view names no game: set one field of GameView.game")
    if which != protos.view.name:
        raise RulesError("malformed", f"expected a {game.title} view, not {which}")
    return _read_dataclass(getattr(view, which), game_view_type(game), which)


# --- types ----------------------------------------------------------------------------------


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _dataclass_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


@cache  # types and descriptors are hashable and few: this is the hot path
def _optional_of(tp: Any) -> Any | None:
    """`X` when `tp` is `X | None`, else None."""
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(tp)) == 2:
            return args[0]
        raise ProtoMappingError(f"unions other than `X | None` have no proto mapping: {tp}")
    return None


@cache  # types and descriptors are hashable and few: this is the hot path
def _element_of(tp: Any) -> Any | None:
    """The element type of a variable-length collection type, else None. A mapping's
    elements are its (key, value) pairs."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    if origin in (frozenset, set, list):
        return args[0]
    if origin in (dict, Mapping, typing.Mapping):
        return tuple[args[0], args[1]]  # type: ignore[valid-type]
    return None


@cache  # types and descriptors are hashable and few: this is the hot path
def _fixed_tuple(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) is tuple:
        args = typing.get_args(tp)
        if not (len(args) == 2 and args[1] is Ellipsis):
            return args
    return None


@cache  # types and descriptors are hashable and few: this is the hot path
def _is_enum(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, Enum)


@cache  # types and descriptors are hashable and few: this is the hot path
def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


@cache  # types and descriptors are hashable and few: this is the hot path
def _fields_in_order(desc: Descriptor) -> tuple[FieldDescriptor, ...]:
    return tuple(sorted(desc.fields, key=lambda f: f.number))


def _descriptor(message: Message) -> Descriptor:
    return typing.cast(Descriptor, message.DESCRIPTOR)


def _message_type(field: FieldDescriptor) -> Descriptor:
    if field.message_type is None:
        raise ProtoMappingError(f"{field.full_name} must be a message")
    return field.message_type


def _sorted(items: Iterable[Any]) -> list[Any]:
    values = list(items)
    try:
        return sorted(values)
    except TypeError:  # e.g. dataclasses: any fixed order will do, repr is one
        return sorted(values, key=repr)


_ENUM_NUMBERS: dict[tuple[str, type[Enum]], dict[Enum, int]] = {}
_ENUM_MEMBERS: dict[tuple[str, type[Enum]], dict[int, Enum]] = {}


def _enum_numbers(enum_desc: EnumDescriptor, enum: type[Enum]) -> dict[Enum, int]:
    key = (enum_desc.full_name, enum)
    if key not in _ENUM_NUMBERS:
        _ENUM_NUMBERS[key] = _find_enum_numbers(enum_desc, enum)
    return _ENUM_NUMBERS[key]


def _find_enum_numbers(enum_desc: EnumDescriptor, enum: type[Enum]) -> dict[Enum, int]:
    numbers: dict[Enum, int] = {}
    for member in enum:
        value = enum_desc.values_by_name.get(enum_value_name(enum_desc, member))
        if value is None:
            raise ProtoMappingError(
                f"enum {enum_desc.name} has no value {enum_value_name(enum_desc, member)}"
            )
        numbers[member] = value.number
    return numbers


def _enum_members(enum_desc: EnumDescriptor, enum: type[Enum]) -> dict[int, Enum]:
    key = (enum_desc.full_name, enum)
    if key not in _ENUM_MEMBERS:
        numbers = _enum_numbers(enum_desc, enum)
        _ENUM_MEMBERS[key] = {number: member for member, number in numbers.items()}
    return _ENUM_MEMBERS[key]


# --- dataclass → message --------------------------------------------------------------------


# Each (message type, Python type) pair is compiled once into a writer: a closure that
# knows its fields, their proto names, their enum numbers and which sub-writers to call, so
# the per-call work is getattr/setattr and nothing reflective (no type hints, descriptors or
# `typing` inspection per value). Issue 17: views are mapped for every reader of a version.

Writer = Callable[[Message, Any], None]
_WRITERS: dict[tuple[Descriptor, Any], Writer] = {}


def _write_dataclass(message: Message, obj: Any) -> None:
    _writer(_descriptor(message), type(obj))(message, obj)


def _writer(desc: Descriptor, tp: Any) -> Writer:
    """The compiled writer that fills a message of type `desc` from a value of type `tp`."""
    key = (desc, tp)
    found = _WRITERS.get(key)
    if found is None:
        # A placeholder first, so a type that contains itself compiles (it calls the real
        # writer through the cache once that exists).
        _WRITERS[key] = lambda message, value: _WRITERS[key](message, value)
        try:
            found = _WRITERS[key] = _compile_value(desc, tp)
        except BaseException:
            del _WRITERS[key]
            raise
    return found


def _compile_value(desc: Descriptor, tp: Any) -> Writer:
    """A message that stands for one value: a dataclass, a fixed tuple (positional fields)
    or a collection (its single repeated field)."""
    if _is_dataclass_type(tp):
        plan = list(_field_writers(desc, tp).items())

        def write_dataclass(message: Message, obj: Any) -> None:
            for name, write in plan:
                write(message, getattr(obj, name))

        return write_dataclass
    fields = _fields_in_order(desc)
    members = _fixed_tuple(tp)
    if members is not None:
        if len(members) != len(fields):
            raise ProtoMappingError(f"{desc.name} needs {len(members)} fields")
        writers = [_compile_field(f, m) for f, m in zip(fields, members, strict=True)]

        def write_tuple(message: Message, value: Any) -> None:
            for write, item in zip(writers, value, strict=True):
                write(message, item)

        return write_tuple
    if _element_of(tp) is not None and len(fields) == 1:
        return _compile_field(fields[0], tp)
    raise ProtoMappingError(f"no mapping from {tp} to message {desc.name}")


_FIELD_WRITERS: dict[tuple[Descriptor, Any], dict[str, Writer]] = {}


def _field_writers(desc: Descriptor, tp: Any) -> dict[str, Writer]:
    """A writer for each field of the dataclass type `tp` into a message of type `desc`, by
    field name, in the dataclass's order (compiled once per pair)."""
    key = (desc, tp)
    found = _FIELD_WRITERS.get(key)
    if found is None:
        hints = _hints(tp)
        by_name = desc.fields_by_name
        writers: dict[str, Writer] = {}
        for f in _dataclass_fields(tp):
            if f.name not in by_name:
                raise ProtoMappingError(f"{desc.name} has no field for {tp.__name__}.{f.name}")
            writers[f.name] = _compile_field(by_name[f.name], hints[f.name])
        found = _FIELD_WRITERS[key] = writers
    return found


def _compile_field(field: FieldDescriptor, tp: Any) -> Writer:
    name = field.name
    inner = _optional_of(tp)
    optional = inner is not None
    if optional:
        tp = inner
    if field.is_repeated:
        element = _element_of(tp)
        if element is None:
            raise ProtoMappingError(f"repeated field {field.full_name} needs a collection type")
        if field.message_type is not None:
            item_writer = _writer(field.message_type, element)

            def write_messages(message: Message, value: Any) -> None:
                if value is None and optional:
                    return  # unset: absent
                items = value.items() if isinstance(value, Mapping) else value
                if isinstance(value, frozenset | set | Mapping):
                    items = _sorted(items)
                add = getattr(message, name).add
                for item in items:
                    item_writer(add(), item)

            return write_messages
        numbers = _scalar_numbers(field, element)

        def write_scalars(message: Message, value: Any) -> None:
            if value is None and optional:
                return
            items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
            if isinstance(value, frozenset | set | Mapping):
                items = _sorted(items)
            container = getattr(message, name)
            if numbers is None:
                container.extend(items)
            else:
                container.extend([numbers[item] for item in items])

        return write_scalars
    if field.message_type is not None:
        sub_writer = _writer(field.message_type, tp)

        def write_message(message: Message, value: Any) -> None:
            if value is None and optional:
                return
            sub = getattr(message, name)
            sub.SetInParent()
            sub_writer(sub, value)

        return write_message
    numbers = _scalar_numbers(field, tp)

    def write_scalar(message: Message, value: Any) -> None:
        if value is None and optional:
            return
        setattr(message, name, value if numbers is None else numbers[value])

    return write_scalar


def _scalar_numbers(field: FieldDescriptor, tp: Any) -> dict[Enum, int] | None:
    """For an enum field, its members' proto numbers; None for any other scalar."""
    if _is_enum(tp):
        if field.enum_type is None:
            raise ProtoMappingError(f"{field.full_name} must be the enum for {tp.__name__}")
        return _enum_numbers(field.enum_type, tp)
    return None


# --- message → dataclass --------------------------------------------------------------------


def _read_dataclass(message: Message, cls: type, path: str) -> Any:
    hints = _hints(cls)
    fields = _descriptor(message).fields_by_name
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in fields:
            raise ProtoMappingError(
                f"{message.DESCRIPTOR.name} has no field for {cls.__name__}.{f.name}"
            )
        kwargs[f.name] = _read_field(message, fields[f.name], hints[f.name], f"{path}.{f.name}")
    return cls(**kwargs)


def _read_field(message: Message, field: FieldDescriptor, tp: Any, path: str) -> Any:
    inner = _optional_of(tp)
    if inner is not None:
        if field.has_presence and not message.HasField(field.name):
            return None
        tp = inner
    if field.is_repeated:
        element = _element_of(tp)
        if element is None:
            raise ProtoMappingError(f"repeated field {field.full_name} needs a collection type")
        raw = getattr(message, field.name)
        if field.message_type is not None:
            items = [_read_value(m, element, f"{path}[{i}]") for i, m in enumerate(raw)]
        else:
            items = [_scalar_in(field, element, v, f"{path}[{i}]") for i, v in enumerate(raw)]
        return _collection(tp, items, path)
    if field.message_type is not None:
        if not message.HasField(field.name):
            raise RulesError("malformed", f"{path} is required")
        return _read_value(getattr(message, field.name), tp, path)
    return _scalar_in(field, tp, getattr(message, field.name), path)


def _collection(tp: Any, items: list[Any], path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (frozenset, set):
        if len(set(items)) != len(items):
            raise RulesError("malformed", f"{path} repeats a value")
        return frozenset(items)
    if origin in (dict, Mapping, typing.Mapping):
        result = dict(items)
        if len(result) != len(items):
            raise RulesError("malformed", f"{path} repeats a key")
        return result
    if origin is list:
        return items
    return tuple(items)


def _read_value(message: Message, tp: Any, path: str) -> Any:
    if _is_dataclass_type(tp):
        return _read_dataclass(message, tp, path)
    fields = _fields_in_order(_descriptor(message))
    members = _fixed_tuple(tp)
    if members is not None:
        if len(members) != len(fields):
            raise ProtoMappingError(f"{message.DESCRIPTOR.name} needs {len(members)} fields")
        return tuple(
            _read_field(message, field, member_tp, f"{path}.{field.name}")
            for field, member_tp in zip(fields, members, strict=True)
        )
    if _element_of(tp) is not None and len(fields) == 1:
        return _read_field(message, fields[0], tp, path)
    raise ProtoMappingError(f"no mapping from message {message.DESCRIPTOR.name} to {tp}")


def _scalar_in(field: FieldDescriptor, tp: Any, raw: Any, path: str) -> Any:
    if _is_enum(tp):
        if field.enum_type is None:
            raise ProtoMappingError(f"{field.full_name} must be the enum for {tp.__name__}")
        member = _enum_members(field.enum_type, tp).get(raw)
        if member is None:
            allowed = ", ".join(str(m.value) for m in tp)
            what = "unspecified" if raw == 0 else f"an unknown value ({raw})"
            raise RulesError("malformed", f"{path} is {what}; expected one of: {allowed}")
        return member
    return raw


# --- drift check ----------------------------------------------------------------------------


def check_mapping(game: AnyGame) -> list[str]:
    """Every mismatch between a game's command and view dataclasses and its protos, as
    readable lines (empty: they agree). Raises ProtoMappingError when the game has no
    protos at all."""
    protos = _protos(game)
    problems: list[str] = []
    action_desc = _message_type(protos.action)
    known = set(protos.command_types)
    for field in action_desc.oneofs_by_name["command"].fields:
        if field.name not in known:
            problems.append(f"{action_desc.name}.{field.name} is not a command of {game.name}")
    seen: set[tuple[str, type]] = set()
    for cls, field in protos.command_fields.items():
        _check_dataclass(game, _message_type(field), cls, problems, seen)
    _check_dataclass(game, _message_type(protos.view), game_view_type(game), problems, seen)
    return problems


def _check_dataclass(
    game: AnyGame, desc: Descriptor, cls: type, problems: list[str], seen: set[tuple[str, type]]
) -> None:
    if (desc.full_name, cls) in seen:
        return
    seen.add((desc.full_name, cls))
    if desc.name != message_name(game, cls):
        problems.append(f"{cls.__name__} maps to {desc.name}, expected {message_name(game, cls)}")
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for name in sorted(set(desc.fields_by_name) - names):
        problems.append(f"{desc.name}.{name} has no field in {cls.__name__}")
    for name in sorted(names - set(desc.fields_by_name)):
        problems.append(f"{cls.__name__}.{name} has no field in {desc.name}")
    for name in sorted(names & set(desc.fields_by_name)):
        _check_field(game, desc.fields_by_name[name], hints[name], problems, seen)


def _check_field(
    game: AnyGame,
    field: FieldDescriptor,
    tp: Any,
    problems: list[str],
    seen: set[tuple[str, type]],
) -> None:
    where = field.full_name.removeprefix("boulevard.v1.")
    try:
        inner = _optional_of(tp)
    except ProtoMappingError as exc:
        problems.append(f"{where}: {exc}")
        return
    if inner is not None:
        if not field.has_presence:
            problems.append(f"{where} must be `optional` (the dataclass field may be None)")
        tp = inner
    if field.is_repeated:
        element = _element_of(tp)
        if element is None:
            problems.append(f"{where} is repeated but {tp} is not a collection")
            return
        if field.message_type is None:
            _check_scalar(game, field, element, problems)
        else:
            _check_value(game, field.message_type, element, problems, seen)
    elif field.message_type is not None:
        _check_value(game, field.message_type, tp, problems, seen)
    elif _element_of(tp) is not None:
        problems.append(f"{where} must be repeated (or a wrapper message) for {tp}")
    else:
        _check_scalar(game, field, tp, problems)


def _check_value(
    game: AnyGame, desc: Descriptor, tp: Any, problems: list[str], seen: set[tuple[str, type]]
) -> None:
    if _is_dataclass_type(tp):
        _check_dataclass(game, desc, tp, problems, seen)
        return
    fields = _fields_in_order(desc)
    members = _fixed_tuple(tp)
    if members is not None:
        if len(members) != len(fields):
            problems.append(f"{desc.name} has {len(fields)} fields for {tp}")
            return
        for field, member_tp in zip(fields, members, strict=True):
            _check_field(game, field, member_tp, problems, seen)
        return
    if _element_of(tp) is not None:
        if len(fields) != 1 or not fields[0].is_repeated:
            problems.append(f"{desc.name} must hold exactly one repeated field for {tp}")
            return
        _check_field(game, fields[0], tp, problems, seen)
        return
    problems.append(f"{desc.name} cannot stand for {tp}")


def _check_scalar(game: AnyGame, field: FieldDescriptor, tp: Any, problems: list[str]) -> None:
    where = field.full_name.removeprefix("boulevard.v1.")
    if _is_enum(tp):
        enum_desc = field.enum_type
        if enum_desc is None:
            problems.append(f"{where} must be enum {message_name(game, tp)}")
            return
        if enum_desc.name != message_name(game, tp):
            problems.append(f"{where} is {enum_desc.name}, expected {message_name(game, tp)}")
        zero = enum_desc.values_by_number.get(0)
        if zero is None or not zero.name.endswith("_UNSPECIFIED"):
            problems.append(
                f"{enum_desc.name} must have 0 = {snake_case(enum_desc.name).upper()}_UNSPECIFIED"
            )
        expected = {enum_value_name(enum_desc, m) for m in tp}
        actual = {v.name for v in enum_desc.values if v.number != 0}
        for name in sorted(expected - actual):
            problems.append(f"{enum_desc.name} lacks {name}")
        for name in sorted(actual - expected):
            problems.append(f"{enum_desc.name}.{name} is no member of {tp.__name__}")
        return
    ok = {
        bool: field.type == FieldDescriptor.TYPE_BOOL,
        int: field.type in _INTEGER_TYPES,
        str: field.type == FieldDescriptor.TYPE_STRING,
    }.get(tp)
    if ok is None:
        problems.append(f"{where}: no proto mapping for {tp}")
    elif not ok:
        problems.append(f"{where} has the wrong scalar type for {tp.__name__}")
