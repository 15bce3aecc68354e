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
    {"$": "dc", "k": [...], "v": [...]}    such a dict of plain keys and values (numbers, text, None,
                                           booleans): its keys and its values, in order, by column
    {"$": "c", "v": [[key, count], ...]}   collections.Counter
    {"$": "q", "v": [...], "n": maxlen}    collections.deque
    {"$": "b", "v": "base64"}              bytes
    {"$": "f", "v": "nan" | "inf" | "-inf"}
    {"$": "o", "c": NAME, "v": {...}}      an object of a registered class: its attributes
    {"$": "n", "c": NAME, "v": [...]}      a registered NamedTuple
    {"$": "e", "c": NAME, "v": MEMBER}     a member of a registered Enum

A registered class may say what its values must satisfy beyond their types (a ring buffer's
position inside it): `checkpoint_problem(self) -> str | None`, asked of each object read back,
refuses the checkpoint with the problem it names.

An object is rebuilt as pickle would, without calling its constructor: `__setstate__` when
its class defines one (else its attributes are set one by one, frozen dataclasses and slots
included). A dataclass whose fields differ from those stored was changed since the
checkpoint was written: reading refuses it (`CheckpointError`), as it refuses a blob of
another `CHECKPOINT_FORMAT` (older agentsims stored pickles).
"""

from __future__ import annotations

import ast
import base64
import collections
import collections.abc
import dataclasses
import enum
import importlib
import inspect
import json
import math
import sys
import textwrap
import types
import typing
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
    text = _ENCODE_JSON(document)
    del document
    # Compressed a slice at a time: a large population's text is never held twice more.
    compressor = zlib.compressobj(1)
    chunks = [compressor.compress(text[start:start + _SLICE].encode()) for start in range(0, len(text), _SLICE)]
    chunks.append(compressor.flush())
    return b"".join(chunks)


_SLICE = 1 << 20


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
        if _PLAIN.issuperset(map(type, value)) and _PLAIN.issuperset(map(type, value.values())):
            return {"$": "dc", "k": list(value), "v": list(value.values())}  # plain keys and values, by column
        return {"$": "d", "v": [[encode(key), encode(item)] for key, item in value.items()]}
    if kind is tuple:
        return {"$": "t", "v": _items(value)}
    if kind is set or kind is frozenset:
        items = [encode(item) for item in value]
        # A set's order is not data: the same set, the same bytes (sorted by their JSON text,
        # which for whole numbers is their decimal text: no encoder call per number).
        whole = all(type(item) is int for item in items)
        items.sort(key=str if whole else _ENCODE_JSON)
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
_CONTAINERS = frozenset({list, dict})  # what JSON reads back that may hold a tagged value


def _items(values: Any) -> list[Any]:
    """A sequence's items encoded; a run of plain values (a generator's state, a memory
    entry) as it is, without a call per item."""
    if _PLAIN.issuperset(map(type, values)):
        return list(values)
    return [encode(item) for item in values]


def attributes(value: Any) -> dict[str, Any]:
    """The attributes a checkpoint keeps of a registered object (what `encode` writes)."""
    return _attributes(value)


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
# Bounds a checkpoint is read within, checked before it is used: a tampered one (a
# decompression bomb, a value nested a hundred thousand deep) is refused, never half-read.
MAX_COMPRESSED_BYTES = 64 * 2**20
MAX_STATE_BYTES = 256 * 2**20  # decompressed: a run of 100,000 agents with long memories fits
MAX_DEPTH = 100  # nesting of values (a run's state is about ten deep)


def loads(blob: bytes) -> Any:
    """The state a checkpoint blob holds; `CheckpointError` if it is not one of this format,
    or breaks the bounds above, or holds a registered object whose attributes are not of
    the types its class declares."""
    if not isinstance(blob, bytes):
        raise CheckpointError(f"not a compressed checkpoint (a {type(blob).__name__})", incompatible=False)
    if len(blob) > MAX_COMPRESSED_BYTES:
        raise CheckpointError(f"a checkpoint of {len(blob)} bytes, more than any run writes "
                              f"({MAX_COMPRESSED_BYTES} at most)", incompatible=False)
    text = _decompressed(blob)
    if not text.startswith(b"{"):
        raise CheckpointError("a checkpoint of another format (an older agentsim's pickle), which agentsim never reads")
    try:
        document = json.loads(text)
    except RecursionError:
        raise CheckpointError(f"the checkpoint's values are nested deeper than {MAX_DEPTH}", incompatible=False) from None
    except ValueError as error:
        raise CheckpointError(f"the checkpoint is not valid JSON ({error})", incompatible=False) from None
    if not isinstance(document, dict) or document.get("checkpoint_format") != CHECKPOINT_FORMAT:
        found = document.get("checkpoint_format") if isinstance(document, dict) else None
        raise CheckpointError(f"a checkpoint of format {found!r}; this agentsim reads format {CHECKPOINT_FORMAT}")
    try:
        return decode(document.get("state"))
    except RecursionError:
        raise CheckpointError(f"the checkpoint's values are nested deeper than {MAX_DEPTH}", incompatible=False) from None


def _decompressed(blob: bytes) -> bytes:
    """The blob inflated, stopping past MAX_STATE_BYTES (a bomb is never inflated whole)."""
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(blob, MAX_STATE_BYTES + 1)
    except zlib.error as error:
        raise CheckpointError(f"not a compressed checkpoint ({error})", incompatible=False) from None
    if len(text) > MAX_STATE_BYTES or inflater.unconsumed_tail:
        raise CheckpointError(f"a checkpoint that inflates past {MAX_STATE_BYTES} bytes, more than any run writes",
                              incompatible=False)
    if not inflater.eof or inflater.unused_data:
        raise CheckpointError("not a compressed checkpoint (truncated, or followed by other bytes)", incompatible=False)
    return text


def decode(data: Any, depth: int = 0) -> Any:
    """The value `encode` turned into `data`."""
    if depth > MAX_DEPTH:
        raise CheckpointError(f"the checkpoint's values are nested deeper than {MAX_DEPTH}", incompatible=False)
    if isinstance(data, list):
        if _CONTAINERS.isdisjoint(map(type, data)):
            return data  # a run of plain values (a window of counts, a generator's state): as read
        return [decode(item, depth + 1) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data.get("$")
    if tag is None:
        return {key: decode(item, depth + 1) for key, item in data.items()}
    try:
        return _decode_tagged(tag, data, depth + 1)
    except CheckpointError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as error:
        raise CheckpointError(f"a malformed checkpoint value ({type(error).__name__}: {error})",
                              incompatible=False) from None


def _decode_tagged(tag: Any, data: dict[str, Any], depth: int) -> Any:
    values = data["v"]
    if tag == "t":
        return tuple(decode(item, depth) for item in _list(values))
    if tag == "s":
        return {decode(item, depth) for item in _list(values)}
    if tag == "fs":
        return frozenset(decode(item, depth) for item in _list(values))
    if tag == "d":
        return {decode(key, depth): decode(item, depth) for key, item in _list(values)}
    if tag == "dc":
        keys = _list(data["k"])
        if len(keys) != len(_list(values)) or not _PLAIN.issuperset(map(type, keys)) \
                or not _PLAIN.issuperset(map(type, values)):
            raise CheckpointError("a malformed dict by columns (keys and values of other lengths or kinds)",
                                  incompatible=False)
        return dict(zip(keys, values))
    if tag == "c":
        return collections.Counter({decode(key, depth): decode(count, depth) for key, count in _list(values)})
    if tag == "q":
        maxlen = data.get("n")
        if maxlen is not None and (type(maxlen) is not int or maxlen < 0):
            raise CheckpointError(f"a malformed deque length {maxlen!r}", incompatible=False)
        return collections.deque(decode(_list(values), depth), maxlen=maxlen)
    if tag == "b":
        return base64.b64decode(values, validate=True)
    if tag == "f":
        if values not in ("nan", "inf", "-inf"):
            raise CheckpointError(f"a malformed number {values!r}", incompatible=False)
        return float(values)
    cls = registered(data.get("c", "")) if isinstance(data.get("c", ""), str) else None
    if cls is None:
        raise CheckpointError(f"the checkpoint holds a {data.get('c')!r}, a class this agentsim does not know "
                              f"(renamed, removed, or not registered for checkpoints)")
    if tag == "e":
        return cls[values]  # type: ignore[index]
    if tag == "n":
        return cls(*(decode(item, depth) for item in _list(values)))
    if tag == "o":
        if not isinstance(values, dict):
            raise CheckpointError(f"a malformed {cls.__qualname__} (its attributes are not a mapping)", incompatible=False)
        return _rebuild(cls, {key: decode(item, depth) for key, item in values.items()})
    raise CheckpointError(f"an unknown checkpoint tag {tag!r}")


def _list(values: Any) -> list[Any]:
    if not isinstance(values, list):
        raise CheckpointError(f"a malformed checkpoint value (a {type(values).__name__} where a list belongs)",
                              incompatible=False)
    return values


def _rebuild(cls: type, attributes: dict[str, Any]) -> Any:
    custom = _custom(cls, "__setstate__")
    if dataclasses.is_dataclass(cls) and not custom:
        expected = {field.name for field in dataclasses.fields(cls)}
        stored = set(attributes)
        if expected != stored:
            raise CheckpointError(f"{cls.__qualname__} has other fields than when the checkpoint was written "
                                  f"({', '.join(sorted(expected ^ stored))})")
    hints = _hints(cls)
    for key, item in attributes.items():
        hint = hints.get(key)
        if hint is not None and not conforms(item, hint):
            raise CheckpointError(f"{cls.__qualname__}.{key} is {_shown(item)}, not {_hint_name(hint)}")
    value: Any = cls.__new__(cls)  # type: ignore[call-overload]
    if custom:
        value.__setstate__(attributes)
    else:
        for key, item in attributes.items():
            object.__setattr__(value, key, item)
    problem = value.checkpoint_problem() if callable(getattr(cls, "checkpoint_problem", None)) else None
    if problem:
        raise CheckpointError(f"{cls.__qualname__} read back {problem}", incompatible=False)
    return value


# --- the types a class declares ----------------------------------------------------------------
_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The attribute types `cls` declares (its annotations, resolved), {} where they cannot be
    resolved: a checkpoint's object is checked against them before it is rebuilt."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = {}
        for base in reversed(cls.__mro__[:-1]):
            hints.update(_instance_hints(base))
        try:
            hints.update(typing.get_type_hints(cls))
        except Exception:  # names only a type checker sees: nothing to check against
            pass
        hints = {key: hint for key, hint in hints.items() if typing.get_origin(hint) is not typing.ClassVar}
        _HINTS[cls] = hints
    return hints


def _instance_hints(cls: type) -> dict[str, Any]:
    """The types a plain class declares in its `__init__` (`self.count: int = 0`), which
    Python keeps nowhere at run time: read from the class's own source (the installed
    package's, never the checkpoint's), each resolved in its module or left out."""
    init = cls.__dict__.get("__init__")
    if init is None or not hasattr(init, "__code__"):
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return {}
    namespace = vars(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else {}
    hints: dict[str, Any] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute)
                and isinstance(node.target.value, ast.Name) and node.target.value.id == "self"):
            try:
                hints[node.target.attr] = eval(compile(ast.Expression(node.annotation), "<annotation>", "eval"),
                                               dict(namespace))
            except Exception:  # a name only a type checker sees
                continue
    return hints


def conforms(value: Any, hint: Any) -> bool:
    """Whether `value` is of the declared type `hint`, as far as plain data can say (the
    container's items included; a type this cannot judge, such as a TypeVar, passes)."""
    if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
        return True
    if hint is None or hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(conforms(value, option) for option in arguments)
    if origin is typing.Literal:
        return value in arguments
    if origin is None:
        if hint is float:  # (an int is a float to a type checker, and a bool an int)
            return isinstance(value, (float, int))
        if isinstance(hint, type):
            return isinstance(value, hint)
        return True
    if not isinstance(origin, type):
        return True
    if not isinstance(value, origin):
        return False
    return _items_conform(value, origin, arguments)


def _items_conform(value: Any, origin: type, arguments: tuple[Any, ...]) -> bool:
    """Whether the items of `value`, a container of type `origin`, are of the types `arguments`."""
    if origin is tuple:
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return all(conforms(item, arguments[0]) for item in value)
        if arguments == ((),):
            return not value
        return not arguments or (len(arguments) == len(value)
                                 and all(conforms(item, kind) for item, kind in zip(value, arguments, strict=True)))
    if issubclass(origin, collections.abc.Mapping):
        if len(arguments) != 2:
            return True
        return _all_conform(value.keys(), arguments[0]) and _all_conform(value.values(), arguments[1])
    if issubclass(origin, collections.abc.Iterable) and len(arguments) == 1:
        return _all_conform(value, arguments[0])
    return True


def _all_conform(values: Any, hint: Any) -> bool:
    """Whether every one of `values` is of the declared type `hint`. Where the type of a value
    decides (`hint` a class, None, or a union of them), one value of each type is asked: a
    window of a million counts is judged by the one type its values have."""
    if _decided_by_type(hint):
        return all(conforms(value, hint) for value in dict(zip(map(type, values), values)).values())
    return all(conforms(value, hint) for value in values)


def _decided_by_type(hint: Any) -> bool:
    if hint is None or hint is type(None) or (isinstance(hint, type) and typing.get_origin(hint) is None):
        return True
    origin = typing.get_origin(hint)
    return (origin is typing.Union or origin is types.UnionType) and all(map(_decided_by_type, typing.get_args(hint)))


def _shown(value: Any) -> str:
    text = repr(value)
    return f"a {type(value).__name__} ({text if len(text) <= 40 else text[:37] + '...'})"


def _hint_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
