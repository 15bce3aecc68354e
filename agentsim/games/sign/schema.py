"""Reading SIGN replies: the strict schema parser and the free-text decoder.

The Schema condition of SIGN (Zhang and Woisetschläger 2026) asks for exactly one line
`@say {name: Ck}`. The strict parser accepts that line and nothing else: surrounding
whitespace and spaces inside the braces are tolerated (they carry no meaning), but quotes,
a rationale after the braces, a lower-case name, a placeholder, a second line or a name
outside the lexicon make a reply non-compliant. The free-text decoder is the naming game's
answer reader (`games/naming/answers.py`, which reads the reply alone): a reply naming exactly one
lexicon entry decodes to it, none or several decode to nothing.

`decision_route` names which step of the ladder (compliant, compliant after the retry,
decoded from free text, fallback, no name) gave an agent its name, from the calls recorded
for the decision; the metrics and the analysis both use it, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...records import CallRecord
from ...scenario import Parsed
from ..naming.answers import AnswerReader

NOT_COMPLIANT = "not schema-compliant"
NOT_IN_LEXICON = "name not in the lexicon"

_SCHEMA = re.compile(r"@say[ \t]*\{[ \t]*name[ \t]*:[ \t]*([A-Za-z0-9_]+)[ \t]*\}")
_LEXICON_SHAPE = re.compile(r"C[1-9][0-9]*")

ROUTES = ("compliant", "compliant_after_retry", "decoded", "fallback", "no_name")


def lexicon(size: int) -> tuple[str, ...]:
    """The SIGN lexicon C1..CM."""
    return tuple(f"C{index}" for index in range(1, size + 1))


def schema_regex(names: Sequence[str]) -> str:
    """The schema as a regular expression over the lexicon, for server-side constrained
    decoding (TGI `grammar`, vLLM `guided_regex`)."""
    return r"@say \{name: (" + "|".join(re.escape(name) for name in names) + r")\}"


class SchemaParser:
    """The strict parser of `@say {name: Ck}` over one lexicon."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = frozenset(names)

    def parse(self, text: str) -> Parsed:
        match = _SCHEMA.fullmatch(text.strip())
        if match is None:
            return Parsed(None, NOT_COMPLIANT)
        name = match.group(1)
        if name in self.names:
            return Parsed(name)
        return Parsed(None, NOT_IN_LEXICON if _LEXICON_SHAPE.fullmatch(name) else NOT_COMPLIANT)


class FreeTextDecoder:
    """A name from free text: exactly one lexicon entry named in the reply alone."""

    def __init__(self, names: Sequence[str]) -> None:
        self._reader = AnswerReader(tuple(names))

    def parse(self, text: str) -> Parsed:
        return self._reader.parse(text)

    def decode(self, text: str) -> str | None:
        return self._reader.parse(text).action


def decision_route(calls: Sequence[CallRecord], action: str | None) -> str:
    """Which step of the ladder gave this decision its name.

    A call the condition's parser accepted has `action` set and no `error`; a reply decoded
    from free text after failing the schema keeps its `error` (why it was non-compliant) and
    carries the decoded name in `action`."""
    if calls:
        last = calls[-1]
        if last.error is None and last.action is not None:
            return "compliant" if len(calls) == 1 else "compliant_after_retry"
        if any(call.action is not None for call in calls):
            return "decoded"
    return "no_name" if action is None else "fallback"
