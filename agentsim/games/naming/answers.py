"""Reading a model's answer from its reply alone.

The papers' public code looked for an option in the prompt and the reply together, so with a
local model it returned the option the prompt listed rather than the one the model chose. Here
only the reply is read:

1. If the reply has an answer field (`'value': X`, `"action": "X"`, `answer = X`, ...), the
   field decides: exactly one option named there is the answer; none or several is unusable.
2. Otherwise a reply that is just an option (`M`, `**M**`, `'M'.`) is that option.
3. Otherwise free text is scanned for options as whole words, case-sensitively: exactly one
   distinct option is the answer; none or several is unusable.

Options that are also English words ("I", "A") are not read where the text uses them as
words: "I am not sure" names no option, "A good name is M" names M. Such an option counts
where it stands alone ("I.", "'A'", "**I**", "choose A") or before a verb ("A is my choice").
"""

from __future__ import annotations

import re
from functools import lru_cache

from ...scenario import Parsed

NO_OPTION = "no valid option"
SEVERAL = "several options"

_FIELD = re.compile(r"""['"]?\b(?:value|action|name|answer|choice)\b['"]?\s*[:=]\s*([^;}\n]*)""", re.IGNORECASE)
_NEXT_KEY = re.compile(r""",\s*['"]""")
_WRAPPING = "*`'\"{}[]<>().:;,! \t\n"
# Options that English uses as words: the pronoun I and the article A.
_WORDS = frozenset({"I", "A"})
# What follows a pronoun or an article: a lower-case word ("I am", "a good name") or a
# contraction ("I'm", "I'd"); an option before a verb ("A is my choice") is still an option.
_USED_AS_WORD = re.compile(r"(?:\s+(?!(?:is|was|wins|won|seems|works|it|again|then|too|now|or|and)\b)[a-z]|['’](?:m|d|ll|ve)\b)")


class AnswerReader:
    """Reads answers among a fixed set of options, with its patterns compiled once."""

    def __init__(self, options: tuple[str, ...] | list[str]) -> None:
        self.options = frozenset(options)
        # Longest first, so that an option that extends another ("AB" beside "A") wins.
        alternatives = "|".join(re.escape(option) for option in sorted(self.options, key=len, reverse=True))
        word = rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])"
        self._exact = re.compile(word)
        self._loose = re.compile(word, re.IGNORECASE)
        self._canonical = {option.lower(): option for option in self.options}

    def parse(self, text: str) -> Parsed:
        """The option `text` answers with, or the problem that makes it unusable."""
        field = _FIELD.search(text)
        if field is not None:
            value = field.group(1)
            if "," in value:  # a JSON-style next key ends the field: "value": "M", "reason": ...
                value = _NEXT_KEY.split(value, maxsplit=1)[0]
            found = _named(self._exact, value) or _named(self._loose, value, self._canonical)
            return _verdict(found)
        bare = text.strip(_WRAPPING)
        if bare in self.options:
            return Parsed(bare)
        return _verdict(_named(self._exact, text))


def answer_replies(options: tuple[str, ...] | list[str]) -> dict[str, str]:
    """Each option's reply under constrained decoding: the prompts' answer-first format cut
    after the answer, `{'value': NAME;`. The reason that the prompt asks for next is never read,
    and a finite set of replies, none a prefix of another, is what makes each option's chance
    exactly computable (agentsim/llm/scoring.py)."""
    return {option: f"{{'value': {option};" for option in options}


def parse_answer(text: str, options: tuple[str, ...] | list[str]) -> Parsed:
    """`AnswerReader(options).parse(text)`, with readers kept for recent option sets."""
    return _reader(frozenset(options)).parse(text)


@lru_cache(maxsize=256)
def _reader(options: frozenset[str]) -> AnswerReader:
    return AnswerReader(sorted(options))


def _named(pattern: re.Pattern[str], text: str, canonical: dict[str, str] | None = None) -> set[str]:
    """The options `pattern` finds in `text`, leaving out "I" and "A" where they are words."""
    found = set()
    for match in pattern.finditer(text):
        option = match.group(0) if canonical is None else canonical[match.group(0).lower()]
        if option in _WORDS and _USED_AS_WORD.match(text, match.end()):
            continue
        found.add(option)
    return found


def _verdict(found: set[str]) -> Parsed:
    if len(found) == 1:
        return Parsed(next(iter(found)))
    return Parsed(None, SEVERAL if found else NO_OPTION)
