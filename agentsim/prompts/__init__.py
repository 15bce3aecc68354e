"""Prompt templates: text files of named sections, rendered with `str.format` and read back.

A template file holds sections headed by a line `[name]`; a section is `str.format` text
(`{{` and `}}` for literal braces). Reading is the inverse of rendering: `read` turns a
rendered section back into its field values, which is how the stand-in policy understands a
prompt the way an LLM would have to (from the text alone, also over HTTP), and how tests check
that a prompt rebuilt from the store is the prompt that was sent.
"""

from __future__ import annotations

import operator
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import ParameterError
from ..kept import Kept

_HEADER = re.compile(r"^\[([a-z_]+)\]$")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    sections: dict[str, str]
    _readers: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False, repr=False)
    _readings: dict[tuple[str, tuple[str, ...] | None], Callable[[str], dict[str, str] | None]] = field(
        default_factory=dict, compare=False, repr=False)
    _pieces: dict[str, object] = field(default_factory=dict, compare=False, repr=False)
    _finders: dict[tuple[str, tuple[str, ...]], _Finder] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, name: str, text: str) -> PromptTemplate:
        sections: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in text.splitlines():
            header = _HEADER.match(line)
            if header:
                current = sections.setdefault(header.group(1), [])
            elif current is not None:
                current.append(line)
        return cls(name=name, text=text, sections={key: "\n".join(lines).rstrip("\n") for key, lines in sections.items()})

    @classmethod
    def load(cls, game: str, variant: str) -> PromptTemplate:
        """A built-in variant (`agentsim/games/<game>/prompts/<variant>.txt`, next to the game)
        or a path to a template file."""
        path = Path(variant)
        if path.suffix == ".txt" and path.is_file():
            return cls.parse(path.stem, path.read_text(encoding="utf-8"))
        folder = resources.files(f"agentsim.games.{game}").joinpath("prompts")
        resource = folder.joinpath(f"{variant}.txt")
        if not resource.is_file():
            built_in = sorted(item.name.removesuffix(".txt") for item in folder.iterdir())
            raise ParameterError(
                f"no prompt template '{variant}' for {game}; use one of {', '.join(built_in)} or a path to a .txt template"
            )
        return cls.parse(variant, resource.read_text(encoding="utf-8"))

    def require(self, *names: str) -> PromptTemplate:
        missing = [name for name in names if name not in self.sections]
        if missing:
            raise ParameterError(f"prompt template '{self.name}' lacks section(s) {', '.join(missing)}; add them as [name] blocks")
        return self

    def fields(self, section: str) -> set[str]:
        """The fields a section uses (`{entries}`, `{options}`...)."""
        return {name for _text, name, _spec, _conversion in string.Formatter().parse(self.sections.get(section, ""))
                if name}

    def require_fields(self, **wanted: tuple[str, ...]) -> PromptTemplate:
        """Check that each section uses the fields the game fills in and needs the model to see:
        `history=("entries",)`; "options|options_text" is satisfied by either. A template that
        leaves one out would run, and silently never show the model its memory."""
        for section, names in wanted.items():
            present = self.fields(section)
            for name in names:
                choices = name.split("|")
                if not present.intersection(choices):
                    shown = " or ".join(f"{{{choice}}}" for choice in choices)
                    raise ParameterError(f"prompt template '{self.name}' lacks the field {shown} in its [{section}] section; "
                                         "add it (docs/writing-a-scenario.md lists each section's fields)")
        return self

    def render(self, section: str, /, **values: object) -> str:
        """`str.format` of the section, from pieces split once (prompts are rendered per call)."""
        pieces = self._pieces.get(section)
        if pieces is None:
            pieces = self._pieces[section] = _split_pieces(self.sections[section])
        if pieces is _NEEDS_FORMAT:
            return self.sections[section].format(**values)
        literals, names = pieces  # type: ignore[misc]
        parts = [literals[0]]
        for name, literal in zip(names, literals[1:]):
            parts.append(str(values[name]))
            parts.append(literal)
        return "".join(parts)

    def bind(self, section: str, /, **static: object) -> Callable[[Mapping[str, object]], str]:
        """A renderer for `section` with `static` fields filled in once; it takes the remaining
        fields as one mapping (a prompt is rendered per decision, and keywords cost more)."""
        pieces = _split_pieces(self.sections[section])
        if pieces is _NEEDS_FORMAT:
            text = self.sections[section]
            return lambda values: text.format(**static, **values)
        literals, names = pieces  # type: ignore[misc]
        merged: list[str] = [literals[0]]
        dynamic: list[str] = []
        for name, literal in zip(names, literals[1:]):
            if name in static:
                merged[-1] += str(static[name]) + literal
            else:
                dynamic.append(name)
                merged.append(literal)
        return _compiled_renderer(merged, dynamic)

    def read(self, section: str, text: str, only: tuple[str, ...] | None = None) -> dict[str, str] | None:
        """The field values that render `section` into `text`, or None if it does not fit;
        with `only`, just those fields (the text after the last wanted field is not read)."""
        return self.reading(section, only)(text)

    def reading(self, section: str, only: tuple[str, ...] | None = None) -> Callable[[str], dict[str, str] | None]:
        """`read` of `section` (with `only`) as one function of the text, made once.

        Each field ends where the literal text after it next occurs (what a lazy regex group
        would match); the stand-in reads a prompt on every call, so the walk over the literals
        is compiled into straight-line code."""
        key = (section, only)
        reading = self._readings.get(key)
        if reading is None:
            plan = _reading_plan(self.sections[section], only)
            if plan is _NEEDS_REGEX:
                reading = partial(_read_by_regex, self.reader(section), only)
            else:
                reading = _compiled_reading(*plan)  # type: ignore[misc]
            self._readings[key] = reading
        return reading

    def findall(self, section: str, text: str, *names: str) -> list[tuple[str, ...]]:
        """The values of fields `names` in every non-overlapping rendering of `section` inside
        `text` (history entries), as tuples in the order asked.

        A section of one line renders within a line, so each line is read alone and kept:
        histories differ, but their entry lines recur throughout a run."""
        key = (section, names)
        finder = self._finders.get(key)
        if finder is None:
            text_of_section = self.sections[section]
            literal = "".join(piece for piece, *_ in string.Formatter().parse(text_of_section))
            # Without literal text a rendering can be empty, and would be found at line ends too.
            finder = self._finders[key] = _Finder(self.reader(section, anchored=False), names,
                                                  one_line="\n" not in text_of_section and bool(literal))
        return finder.findall(text)

    def reader(self, section: str, *, anchored: bool = True) -> re.Pattern[str]:
        key = f"{section}:{anchored}"
        pattern = self._readers.get(key)
        if pattern is None:
            pattern = _compile_reader(self.sections[section], anchored)
            self._readers[key] = pattern
        return pattern


class _Finder:
    """`findall` for one section and one choice of fields."""

    def __init__(self, pattern: re.Pattern[str], names: tuple[str, ...], *, one_line: bool) -> None:
        self.pattern = pattern
        positions = [pattern.groupindex[name] - 1 for name in names]
        if pattern.groups == 1:
            self.pick: Callable[[Any], tuple[str, ...]] = lambda row: (row,)
        else:
            getter = operator.itemgetter(*positions)
            self.pick = getter if len(positions) > 1 else lambda row: (getter(row),)
        self.lines = Kept(self._in_line, limit=4096) if one_line else None

    def _in_line(self, line: str) -> tuple[tuple[str, ...], ...]:
        return tuple(map(self.pick, self.pattern.findall(line)))

    def findall(self, text: str) -> list[tuple[str, ...]]:
        lines = self.lines
        if lines is None:
            return list(map(self.pick, self.pattern.findall(text)))
        rows: list[tuple[str, ...]] = []
        for line in text.split("\n"):
            rows += lines[line]
        return rows


_NEEDS_REGEX = object()
_NEEDS_FORMAT = object()


def _split_pieces(section: str) -> object:
    """(literals, field names) with len(literals) == len(names) + 1, or _NEEDS_FORMAT when a
    field uses a format spec, a conversion or an attribute."""
    literals = [""]
    names: list[str] = []
    for literal, name, spec, conversion in string.Formatter().parse(section):
        literals[-1] += literal
        if name is not None:
            if spec or conversion or not name.isidentifier():
                return _NEEDS_FORMAT
            names.append(name)
            literals.append("")
    return literals, names


def _compiled_renderer(literals: list[str], names: list[str]) -> Callable[[Mapping[str, object]], str]:
    """`literals[0] + str(values[names[0]]) + literals[1] + ...` compiled into one f-string,
    which joins all its parts in one step: half the cost of a loop over them. Field names are
    identifiers (`_split_pieces` checks) and the literals are passed as globals, never spliced
    into the source."""
    namespace: dict[str, Any] = {f"_{number}": literal for number, literal in enumerate(literals)}
    fields = "".join(f"{{values[{name!r}]!s}}{{_{number}}}" for number, name in enumerate(names, start=1))
    exec(f'def render(values):\n    return f"{{_0}}{fields}"\n', namespace)
    return namespace["render"]  # type: ignore[no-any-return]


def _reading_plan(section: str, only: tuple[str, ...] | None) -> object:
    """What `read` walks: the leading literal; then, for each literal it must find, the field it
    ends (or None when that field is not wanted) and the literal; then the last field (or
    None) and the trailing literal. _NEEDS_REGEX when two fields touch and only
    backtracking could split them."""
    literals = [""]
    names: list[str] = []
    for literal, name, _spec, _conversion in string.Formatter().parse(section):
        literals[-1] += literal  # escaped braces arrive as extra, nameless pieces
        if name is not None:
            names.append(name)
            literals.append("")
    if not names or any(not literal for literal in literals[1:-1]):
        return _NEEDS_REGEX

    def wanted(number: int) -> bool:
        return only is None or names[number] in only

    # Every literal up to the one that ends the last wanted field is found, in order: a later
    # literal may also occur inside an earlier field, so none can be skipped. After the last
    # wanted field the rest need not be read.
    last = len(names) - 1
    needed = last - 1 if wanted(last) else max((number for number in range(last) if wanted(number)), default=-1)
    steps = [(names[number] if wanted(number) else None, literal)
             for number, literal in enumerate(literals[1:-1]) if number <= needed]
    return literals[0], steps, (names[last] if wanted(last) else None, literals[-1])


def _compiled_reading(head: str, steps: list[tuple[str | None, str]],
                      last: tuple[str | None, str]) -> Callable[[str], dict[str, str] | None]:
    """The walk of a reading plan as one function: split off each literal in turn with
    `str.partition`, keep the wanted fields, and check that a field used twice reads the same
    both times. `partition` takes its one argument without the argument parsing that `find`
    and `startswith` go through, which cost more than the search itself on a prompt.

    As in `_compiled_renderer`, the literals and field names are globals, never spliced into
    the source; only variable numbers and lengths are."""
    last_name, tail = last
    namespace: dict[str, Any] = {"_head": head, "_tail": tail}
    lines = ["def read(text):"]
    if head:
        lines.extend((f"    if text[:{len(head)}] != _head:", "        return None"))
    if tail:
        lines.extend((f"    if text[-{len(tail)}:] != _tail:", "        return None"))
    lines.append(f"    rest = text[{len(head)}:]" if head else "    rest = text")
    first: dict[str, str] = {}  # a field's name -> the variable holding its first reading

    def take(name: str, variable: str) -> None:
        if name in first:
            lines.extend((f"    if {variable} != {first[name]}:", "        return None"))
        else:
            first[name] = variable

    for number, (name, literal) in enumerate(steps):
        namespace[f"_literal{number}"] = literal
        value = f"value{number}" if name is not None else "_"
        lines.extend((f"    {value}, found, rest = rest.partition(_literal{number})", "    if not found:", "        return None"))
        if name is not None:
            take(name, value)
    if tail:  # the tail must follow what was read, not overlap it
        lines.extend((f"    if len(rest) < {len(tail)}:", "        return None"))
    if last_name is not None:
        lines.append(f"    value_last = rest[:len(rest) - {len(tail)}]" if tail else "    value_last = rest")
        take(last_name, "value_last")
    entries = []
    for number, (name, variable) in enumerate(first.items()):
        namespace[f"_name{number}"] = name
        entries.append(f"_name{number}: {variable}")
    lines.append(f"    return {{{', '.join(entries)}}}")
    exec("\n".join(lines) + "\n", namespace)
    return namespace["read"]  # type: ignore[no-any-return]


def _read_by_regex(pattern: re.Pattern[str], only: tuple[str, ...] | None, text: str) -> dict[str, str] | None:
    match = pattern.fullmatch(text)
    if match is None:
        return None
    return {name: value for name, value in match.groupdict().items() if only is None or name in only}


def _compile_reader(section: str, anchored: bool) -> re.Pattern[str]:
    parts: list[str] = []
    seen: set[str] = set()
    for literal, name, _spec, _conversion in string.Formatter().parse(section):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name in seen:
            parts.append(f"(?P={name})")
        else:
            seen.add(name)
            # Inside a single entry a value never spans lines; the whole-prompt reader must
            # let a block (the history) span them.
            parts.append(f"(?P<{name}>.*?)" if anchored else f"(?P<{name}>[^\\n]*?)")
    return re.compile("".join(parts), re.DOTALL if anchored else 0)
