"""Scenario parameters: frozen, keyword-only dataclasses that validate themselves.

A scenario's parameters are one such dataclass. The command line's `--set key=value` goes
through `with_overrides`, which turns text into the field's declared type, so a typo or an
impossible value stops the run before anything starts, with a message naming the fix.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import types
import typing
from argparse import ArgumentTypeError
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self, get_args, get_origin, get_type_hints

from .errors import ParameterError


@dataclasses.dataclass(frozen=True, kw_only=True)
class Params:
    """Base of every scenario's parameters; subclasses add fields and extend `validate`."""

    # How `--set` spells a field (`KEY`, or `standin.KEY` for the stand-in's settings) and
    # what the messages call one, so that a typo is reported in the user's own words.
    key_prefix: ClassVar[str] = ""
    kind: ClassVar[str] = "parameter"
    # Fields a subclass inherits but its scenario never reads, each with the field that does
    # the job there (`topology` -> `topologies`): `--set` refuses them rather than ignore them.
    unread: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        for field in dataclasses.fields(self):  # a scenario file's VARIANTS give values of any type
            value = getattr(self, field.name)
            if isinstance(value, list) and get_origin(hints.get(field.name)) is tuple:
                value = tuple(value)
                object.__setattr__(self, field.name, value)
            expected = hints.get(field.name)
            if expected is not None and not _fits(value, expected):
                raise ParameterError(f"{self.key_prefix}{field.name} must be {_describe(expected)} (got {value!r})")
        for field in dataclasses.fields(self):  # NaN and infinity pass every comparison's test the wrong way
            value = getattr(self, field.name)
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, float) and not math.isfinite(item):
                    raise ParameterError(f"{self.key_prefix}{field.name} must be a finite number (got {item})")
        self.validate()

    def validate(self) -> None:
        """Raise ParameterError naming the fix when a value is impossible."""

    def as_dict(self) -> dict[str, Any]:
        return {field.name: _jsonable(getattr(self, field.name)) for field in dataclasses.fields(self)}

    def replace(self, **changes: Any) -> Self:
        unknown = sorted(set(changes) - self.field_names())
        if unknown:
            raise ParameterError(self._unknown_message(unknown[0]))
        return dataclasses.replace(self, **changes)

    def with_overrides(self, overrides: Mapping[str, str], values: Mapping[str, Any] | None = None) -> Self:
        """Apply `--set key=value` pairs, converting each text to its field's type, and `values`
        (Python's own, used as they are) in the same change: checked once, together, whatever
        order they came in (`stop_at="flip"` beside `committed=2`)."""
        hints = get_type_hints(type(self))
        changes: dict[str, Any] = {}
        for key, text in overrides.items():
            if key not in hints or key not in self.field_names():
                raise ParameterError(self._unknown_message(key))
            self.refuse_unread(key)
            changes[key] = convert(text, hints[key], self.key_prefix + key)
        self.refuse_unread(*(values or {}))
        return self.replace(**(changes | dict(values or {})))

    def refuse_unread(self, *keys: str) -> None:
        """A user's setting of a parameter this scenario inherits but never reads changes
        nothing: refused, naming the one it reads instead (from `--set` and the Python API)."""
        for key in keys:
            if key in self.unread:
                instead = self.unread[key]
                raise ParameterError(f"this scenario does not read {self.kind} '{self.key_prefix}{key}', so setting it "
                                     f"would change nothing; did you mean '{self.key_prefix}{instead}'? "
                                     f"(--set {self.key_prefix}{instead}=...)")

    @classmethod
    def field_names(cls) -> set[str]:
        return {field.name for field in dataclasses.fields(cls)}

    @classmethod
    def _unknown_message(cls, key: str) -> str:
        names = sorted(cls.field_names() - set(cls.unread))
        known = ", ".join(cls.key_prefix + name for name in names)
        if not known:
            return f"unknown {cls.kind} '{cls.key_prefix}{key}'; this scenario has none"
        close = difflib.get_close_matches(key, names, n=1)
        guess = f"; did you mean '{cls.key_prefix}{close[0]}'? " if close else "; "
        return f"unknown {cls.kind} '{cls.key_prefix}{key}'{guess}known {cls.kind}s are: {known}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class StandInSettings(Params):
    """Base of a game family's stand-in settings: what its rule favours, how noisy it is, how
    often it fails. They belong to the stand-in, not to the experiment: a run on a language
    model never reads them. A scenario carries them as `standin` (a class attribute a subclass
    overrides, or `standin=` when it is built); the command line sets them as
    `--set standin.KEY=VALUE`; the store records them beside the parameters."""

    key_prefix: ClassVar[str] = "standin."
    kind: ClassVar[str] = "stand-in setting"

    def require_rates(self, *names: str) -> None:
        """Each named field is a probability."""
        for name in names:
            value = getattr(self, name)
            require(0 <= value <= 1, f"{self.key_prefix}{name} must be in [0, 1] (got {value})")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = get_type_hints(cls)
    return hints


def _fits(value: Any, annotation: Any) -> bool:
    """Whether `value` is of the declared type (the types `convert` reads; others pass)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, option) for option in args)
    if origin is Literal:
        return any(value == choice and type(value) is type(choice) for choice in args)
    if origin is tuple:  # (which members a tuple of Literals may hold, its class says in its own words)
        item = args[0] if args and get_origin(args[0]) is not Literal else Any
        return isinstance(value, tuple) and all(_fits(member, item) for member in value)
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    return True


def _describe(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(option) for option in args)
    if origin is Literal:
        return "one of " + ", ".join(repr(choice) for choice in args)
    if origin is tuple:
        return f"a list of {_describe(args[0]) if args and get_origin(args[0]) is not Literal else 'values'}"
    return {type(None): "None", bool: "true or false", int: "a whole number", float: "a number",
            str: "text"}.get(annotation, getattr(annotation, "__name__", str(annotation)))


def require(condition: bool, message: str) -> None:
    """Validation shorthand: raise ParameterError(message) unless condition holds."""
    if not condition:
        raise ParameterError(message)


def convert(text: str, annotation: Any, key: str) -> Any:
    """Turn command-line text into a value of `annotation` (int, float, bool, str,
    Literal, Optional, tuple[str, ...]), or raise ParameterError saying what was expected."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if text.lower() in ("none", "null", "") and type(None) in args:
            return None
        errors = []
        for option in (arg for arg in args if arg is not type(None)):
            try:
                return convert(text, option, key)
            except ParameterError as error:
                errors.append(str(error))
        raise ParameterError(errors[0] if errors else f"{key}: cannot read '{text}'")
    if origin is Literal:
        for choice in args:
            if str(choice) == text:
                return choice
        allowed = ", ".join(str(choice) for choice in args)
        raise ParameterError(f"{key} must be one of {allowed} (got '{text}')")
    if origin is tuple:
        item_type = args[0] if args else str
        items = [item.strip() for item in text.split(",") if item.strip()]
        return tuple(convert(item, item_type, key) for item in items)
    if annotation is bool:
        lowered = text.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ParameterError(f"{key} must be true or false (got '{text}')")
    if annotation is int:
        try:
            if "_" in text:  # Python's int() reads 1_0 as 10; a user means something else
                raise ValueError(text)
            return int(text)
        except ValueError:
            raise ParameterError(f"{key} must be a whole number (got '{text}')") from None
    if annotation is float:
        try:
            if "_" in text:
                raise ValueError(text)
            number = float(text)
        except ValueError:
            raise ParameterError(f"{key} must be a number (got '{text}')") from None
        if not math.isfinite(number):
            raise ParameterError(f"{key} must be a finite number (got '{text}')")
        return number
    if annotation is str:
        return text
    raise ParameterError(f"{key} cannot be set from the command line; set it in the scenario file")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _jsonable(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return value


def finite_float(text: str) -> float:
    """An argparse type: a number that is neither NaN nor infinite (they pass every range
    check the wrong way: `--checkpoint-seconds nan` silently turned checkpoints off)."""
    try:
        if "_" in text:  # float() reads 1_0 as 10
            raise ValueError(text)
        value = float(text)
    except ValueError:
        raise ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise ArgumentTypeError(f"'{text}' is not a finite number")
    return value
