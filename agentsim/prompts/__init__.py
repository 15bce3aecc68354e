"""Prompt templates: text files of named sections, rendered with `str.format` and read back.

A template file holds sections headed by a line `[name]`; a section is `str.format` text
(`{{` and `}}` for literal braces). Reading is the inverse of rendering: `read` turns a
rendered section back into its field values with a regular expression made from the section
(each field a lazy group), which is how the stand-in server understands a prompt the way an
LLM would have to (from the text alone, over HTTP), and how tests check that a prompt rebuilt
from the store is the prompt that was sent.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import ParameterError

_HEADER = re.compile(r"^\[([a-z_]+)\]$")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    sections: dict[str, str]

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
        template = cls(name=name, text=text,
                       sections={key: "\n".join(lines).rstrip("\n") for key, lines in sections.items()})
        for section in template.sections:
            template.fields(section)  # refuses a section that is not format text, or a field that reaches further
        return template

    @classmethod
    def load(cls, game: str, variant: str) -> PromptTemplate:
        """A built-in variant (`agentsim/games/<game>/prompts/<variant>.txt`, next to the game)
        or a path to a template file."""
        path = Path(variant)
        if path.suffix == ".txt" and path.is_file():
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as error:
                raise ParameterError(f"prompt template '{variant}' is not UTF-8 text (byte {error.start}); save it "
                                     f"as UTF-8") from None
            except OSError as error:
                raise ParameterError(f"cannot read the prompt template '{variant}' ({error.strerror}); give a "
                                     f"readable .txt file") from None
            return cls.parse(path.stem, text)
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
        """The fields a section uses (`{entries}`, `{options}`...). A field is a plain name: one
        that reaches into a value (`{0.__class__.__mro__}`, `{options[0]}`) or a number is
        refused, as is text `str.format` cannot read (`{unclosed`)."""
        text = self.sections.get(section, "")
        try:
            parts = list(string.Formatter().parse(text))
            for _literal, _name, spec, _conversion in parts:  # a format spec may hold fields of its own
                parts += list(string.Formatter().parse(spec or ""))
        except ValueError as error:
            raise ParameterError(f"prompt template '{self.name}': its [{section}] section is not format text "
                                 f"({error}); write a literal brace as {{{{ or }}}}") from None
        names = {name for _literal, name, _spec, _conversion in parts if name is not None}
        for name in sorted(names):
            if not name.isidentifier():
                raise ParameterError(f"prompt template '{self.name}' uses the field {{{name}}} in its [{section}] "
                                     f"section; a field is a plain name such as {{options}} (one a scenario supplies: "
                                     f"docs/writing-a-scenario.md), and a literal brace is written {{{{ or }}}}")
        return names

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
        try:
            return self.sections[section].format(**values)
        except (KeyError, IndexError) as error:  # a field the game does not fill in: the template's author to fix
            field = error.args[0] if isinstance(error, KeyError) else "}"
            raise ParameterError(
                f"prompt template '{self.name}' uses the field {{{field}}} in its [{section}] section, which this "
                f"scenario does not supply; remove it from the template, or supply it from the scenario's "
                f"prompt_fields() (docs/writing-a-scenario.md)") from None

    def read(self, section: str, text: str, only: tuple[str, ...] | None = None) -> dict[str, str] | None:
        """The field values that render `section` into `text`, or None if it does not fit;
        with `only`, just those fields."""
        match = self.reader(section).fullmatch(text)
        if match is None:
            return None
        return {name: value for name, value in match.groupdict().items() if only is None or name in only}

    def findall(self, section: str, text: str, *names: str) -> list[tuple[str, ...]]:
        """The values of fields `names` in every non-overlapping rendering of `section` inside
        `text` (history entries), as tuples in the order asked."""
        return [tuple(match.group(name) for name in names) for match in self.reader(section, anchored=False).finditer(text)]

    def reader(self, section: str, *, anchored: bool = True) -> re.Pattern[str]:
        """The regular expression that reads `section`: anchored, a field may span lines (a
        history block); unanchored, one field stays within a line (an entry in a history)."""
        return _compile_reader(self.sections[section], anchored)


@lru_cache(maxsize=256)
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
            parts.append(f"(?P<{name}>.*?)" if anchored else f"(?P<{name}>[^\\n]*?)")
    return re.compile("".join(parts), re.DOTALL if anchored else 0)
