"""Checkpoints as plain data: a run's state turned into JSON and back, never pickled.

A results directory must be safe to open: a checkpoint read back builds built-in values
(numbers, strings, lists, dicts, tuples, sets, bytes, deques, Counters) and objects of the classes
registered here, and nothing else; no code named by the stored bytes runs. A class enters
the registry from its own package: the core registers its records and usage beside their
definitions (`register(MyState)`), each game family its state when it registers itself
(`Family(checkpoint_classes=...)`, agentsim/games/__init__.py, by name where importing the
class would import the game: `register_lazily`), so the core never imports a game family.
An unregistered class is refused on both sides: writing it raises `TypeError` naming the
class, reading it raises `CheckpointError`.

Encoding. JSON values stand for themselves, except what JSON cannot say, which is tagged as
an object whose key "$" names the kind:

    {"$": "t", "v": [...]}                 tuple
    {"$": "s" | "fs", "v": [...]}          set, frozenset
    {"$": "d", "v": [[key, value], ...]}   a dict whose keys are not all strings (or one is "$")
    {"$": "c", "v": [[key, count], ...]}   collections.Counter
    {"$": "q", "v": [...], "n": maxlen}    collections.deque
    {"$": "b", "v": "base64"}              bytes
    {"$": "f", "v": "nan" | "inf" | "-inf"}
    {"$": "o", "c": NAME, "v": {...}}      an object of a registered class: its attributes
    {"$": "n", "c": NAME, "v": [...]}      a registered NamedTuple
    {"$": "e", "c": NAME, "v": MEMBER}     a member of a registered Enum

An object is rebuilt as pickle would, without calling its constructor: `__setstate__` when
its class defines one (else its attributes are set one by one, frozen dataclasses and slots
included). A dataclass whose fields differ from those stored was changed since the
checkpoint was written: reading refuses it (`CheckpointError`), as it refuses a blob of
another `CHECKPOINT_FORMAT` (older agentsims stored pickles).
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import enum
import importlib
import json
import math
import zlib
from typing import Any

from .errors import AgentsimError

# The layout of a checkpoint blob: zlib-compressed JSON {"checkpoint_format": N, "state": ...}.
# Recorded in the experiment table as well; an older agentsim's checkpoints (pickles) have none.
CHECKPOINT_FORMAT = 1

_REGISTRY: dict[str, type] = {}
_NAMES: dict[type, str] = {}
_LAZY: dict[str, str] = {}  # name -> "module:Class", registered when a checkpoint first needs it
_ENCODE_JSON = json.JSONEncoder(separators=(",", ":"), allow_nan=False, ensure_ascii=False).encode


class CheckpointError(AgentsimError):
    """A checkpoint that cannot be read back as this agentsim's plain data: `incompatible`
    when it is whole but of another format or code (written by another agentsim), else
    damaged."""

    def __init__(self, message: str, *, incompatible: bool = True) -> None:
        super().__init__(message)
        self.incompatible = incompatible


def register(*classes: type, name: str | None = None) -> None:
    """Let checkpoints hold objects of `classes` (dataclasses, plain or slotted classes,
    NamedTuples, Enums). `name` (one class only) is how the stored data names the class;
    by default its module and qualified name."""
    if name is not None and len(classes) != 1:
        raise ValueError("name= registers one class")
    for cls in classes:
        key = name or f"{cls.__module__}.{cls.__qualname__}"
        known = _REGISTRY.get(key)
        if known is not None and known is not cls and known.__qualname__ != cls.__qualname__:
            raise ValueError(f"checkpoint name {key} is taken by {known!r}")
        _REGISTRY[key] = cls
        _NAMES[cls] = key


def register_lazily(*paths: str) -> None:
    """Let checkpoints hold objects of the classes at `paths` ("package.module:Class", stored
    under "package.module.Class" as `register` names them), importing a module only when a
    checkpoint written or read first holds one of its classes: a game family registers its state
    without importing its game, so a run of another game does not pay for it. Only the modules
    named here are ever imported, so what a checkpoint names still runs no code of its choosing."""
    for path in paths:
        module, _, qualname = path.partition(":")
        _LAZY.setdefault(f"{module}.{qualname}", path)


def registered(name: str) -> type | None:
    cls = _REGISTRY.get(name)
    if cls is None and name in _LAZY:
        module, _, qualname = _LAZY.pop(name).partition(":")
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
        if _NAMES.get(found) is None:
            register(found)
        cls = _REGISTRY.get(name)
    return cls


def name_of(cls: type) -> str | None:
    """The name checkpoints store `cls` under, or None when it is not registered."""
    name = _NAMES.get(cls)
    if name is None:
        key = f"{cls.__module__}.{cls.__qualname__}"
        if key in _LAZY and registered(key) is cls:
            return key
    return name


# --- writing ---------------------------------------------------------------------------------
def dumps(state: Any) -> bytes:
    """The blob a checkpoint stores for `state`."""
    document = {"checkpoint_format": CHECKPOINT_FORMAT, "state": encode(state)}
    return zlib.compress(_ENCODE_JSON(document).encode(), 1)


def encode(value: Any) -> Any:
    """`value` as JSON-ready data (see the module's docstring)."""
    if value is None or value is True or value is False or type(value) is str or type(value) is int:
        return value
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else {"$": "f", "v": repr(value)}
    if kind is list:
        return _items(value)
    if kind is dict:
        if all(type(key) is str and key != "$" for key in value):
            return {key: encode(item) for key, item in value.items()}
        return {"$": "d", "v": [[encode(key), encode(item)] for key, item in value.items()]}
    if kind is tuple:
        return {"$": "t", "v": _items(value)}
    if kind is set or kind is frozenset:
        items = [encode(item) for item in value]
        items.sort(key=_ENCODE_JSON)  # a set's order is not data: the same set, the same bytes
        return {"$": "s" if kind is set else "fs", "v": items}
    if kind is collections.Counter:
        return {"$": "c", "v": [[encode(key), encode(count)] for key, count in value.items()]}
    if kind is collections.deque:
        return {"$": "q", "v": _items(value), "n": value.maxlen}
    if kind is bytes:
        return {"$": "b", "v": base64.b64encode(value).decode("ascii")}
    name = _NAMES.get(kind) or name_of(kind)
    if name is None:
        raise TypeError(f"a checkpoint cannot hold {kind.__module__}.{kind.__qualname__}: register the class with "
                        f"agentsim.checkpoints.register (in the package that defines it), or keep plain data")
    if isinstance(value, enum.Enum):
        return {"$": "e", "c": name, "v": value.name}
    if isinstance(value, tuple):  # a NamedTuple
        return {"$": "n", "c": name, "v": [encode(item) for item in value]}
    return {"$": "o", "c": name, "v": {key: encode(item) for key, item in _attributes(value).items()}}


_PLAIN = frozenset({str, int, bool, type(None)})  # JSON says them as they are


def _items(values: Any) -> list[Any]:
    """A sequence's items encoded; a run of plain values (a generator's state, a memory
    entry) as it is, without a call per item."""
    if all(type(item) in _PLAIN for item in values):
        return list(values)
    return [encode(item) for item in values]


def _attributes(value: Any) -> dict[str, Any]:
    cls = type(value)
    if _custom(cls, "__getstate__"):
        state = value.__getstate__()
        if not isinstance(state, dict):
            raise TypeError(f"{cls.__qualname__}.__getstate__ must return a dict for a checkpoint")
        return state
    if dataclasses.is_dataclass(cls):  # its fields are its layout, checked when it is read back
        attributes = {field.name: getattr(value, field.name) for field in dataclasses.fields(cls)}
        extra = set(getattr(value, "__dict__", {})) - set(attributes)
        if extra:
            raise TypeError(f"{cls.__qualname__} holds attributes outside its fields ({', '.join(sorted(extra))}); "
                            f"a checkpoint keeps a dataclass's fields only")
        return attributes
    attributes = dict(getattr(value, "__dict__", {}))
    for base in cls.__mro__:
        for slot in base.__dict__.get("__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(value, slot):
                attributes[slot] = getattr(value, slot)
    return attributes


def _custom(cls: type, method: str) -> bool:
    """Whether `cls` has its own `method` (not object's, nor the one dataclasses adds to
    frozen slotted classes, which returns a list)."""
    function = getattr(cls, method, None)
    return (function is not None and function is not getattr(object, method, None)
            and getattr(function, "__module__", None) != "dataclasses")


# --- reading ---------------------------------------------------------------------------------
def loads(blob: bytes) -> Any:
    """The state a checkpoint blob holds; `CheckpointError` if it is not one of this format."""
    try:
        text = zlib.decompress(blob)
    except (zlib.error, TypeError) as error:
        raise CheckpointError(f"not a compressed checkpoint ({error})", incompatible=False) from None
    if not text.startswith(b"{"):
        raise CheckpointError("a checkpoint of another format (an older agentsim's pickle), which agentsim never reads")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise CheckpointError(f"the checkpoint is not valid JSON ({error})", incompatible=False) from None
    if not isinstance(document, dict) or document.get("checkpoint_format") != CHECKPOINT_FORMAT:
        found = document.get("checkpoint_format") if isinstance(document, dict) else None
        raise CheckpointError(f"a checkpoint of format {found!r}; this agentsim reads format {CHECKPOINT_FORMAT}")
    return decode(document.get("state"))


def decode(data: Any) -> Any:
    """The value `encode` turned into `data`."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data.get("$")
    if tag is None:
        return {key: decode(item) for key, item in data.items()}
    try:
        return _decode_tagged(tag, data)
    except CheckpointError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as error:
        raise CheckpointError(f"a malformed checkpoint value ({type(error).__name__}: {error})") from None


def _decode_tagged(tag: Any, data: dict[str, Any]) -> Any:
    values = data["v"]
    if tag == "t":
        return tuple(decode(item) for item in values)
    if tag == "s":
        return {decode(item) for item in values}
    if tag == "fs":
        return frozenset(decode(item) for item in values)
    if tag == "d":
        return {decode(key): decode(item) for key, item in values}
    if tag == "c":
        return collections.Counter({decode(key): decode(count) for key, count in values})
    if tag == "q":
        return collections.deque((decode(item) for item in values), maxlen=data.get("n"))
    if tag == "b":
        return base64.b64decode(values, validate=True)
    if tag == "f":
        if values not in ("nan", "inf", "-inf"):
            raise CheckpointError(f"a malformed number {values!r}")
        return float(values)
    cls = registered(data.get("c", ""))
    if cls is None:
        raise CheckpointError(f"the checkpoint holds a {data.get('c')!r}, a class this agentsim does not know "
                              f"(renamed, removed, or not registered for checkpoints)")
    if tag == "e":
        return cls[values]  # type: ignore[index]
    if tag == "n":
        return cls(*(decode(item) for item in values))
    if tag == "o":
        return _rebuild(cls, {key: decode(item) for key, item in values.items()})
    raise CheckpointError(f"an unknown checkpoint tag {tag!r}")


def _rebuild(cls: type, attributes: dict[str, Any]) -> Any:
    custom = _custom(cls, "__setstate__")
    if dataclasses.is_dataclass(cls) and not custom:
        expected = {field.name for field in dataclasses.fields(cls)}
        stored = set(attributes)
        if expected != stored:
            raise CheckpointError(f"{cls.__qualname__} has other fields than when the checkpoint was written "
                                  f"({', '.join(sorted(expected ^ stored))})")
    value: Any = cls.__new__(cls)  # type: ignore[call-overload]
    if custom:
        value.__setstate__(attributes)
        return value
    for key, item in attributes.items():
        object.__setattr__(value, key, item)
    return value
