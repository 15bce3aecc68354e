"""What a player chooses: an option from a list, a number in a range, a split of a budget, a
target among the other live players. Each kind of choice knows everything the layer derives
from it, so a game names its choice and writes none of this:

    instruction()    the answer format the prompt ends with
    read(text)       the choice a reply names, or the problem that makes it unusable
    text(value)      the choice as the store records it (`Move.action`), `value(text)` back
    reply(value)     the reply a player writes for it (the stand-in's answers, the grammar's replies)
    grammar()        the reply's grammar for constrained decoding: a choice grammar (one reply
                     per option, so a backend that scores options gives their exact
                     probabilities) where the choice set has at most `SMALL` members, else a regex
    options          the choice set, where it is small (empty otherwise)
    draw(rng)        a uniformly random choice: the documented fallback and the stand-in's default
    spec()           the choice as plain data, for the store (`choice_from_spec` reads it back)

Reading a reply (documented in docs/games-layer.md): an option or a target is the one option
the reply names as a whole word (any case), a mention right after a negation ("not", "never",
"won't", up to two words before it: "I will not volunteer") left out, and a one-letter option
that is also a word ("A", "I") only where it stands alone, not as that word of a sentence (the
article in "I choose a side: B", the pronoun in "I pick J"); naming none or several is unusable. A number is the number the
reply commits to: first a scale after a number is taken out ("3 out of 7", "3 of 7", "4/7" read
3 and 4), so is a number the reply turns down ("3, not 5", "rather than 5", "instead of 5"),
and so is a number it copies from the question (a number inside three words running as the
question has them: "Round 1 of 3: your value for this round's item is 69." bids nothing); then
the only number left; else the one number a commitment names ("I bid 50", "give 4", "answer:
33"), two different ones ("I offer 4 and keep 6.") being unusable; else the number the reply
ends with; out of range, not whole where whole numbers are asked, or several numbers with none
committed to or at the end: unusable. A split is exactly `parts` numbers (in order) that are
not negative and add up to the budget.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ParameterError
from ..llm.base import Grammar

SMALL = 101  # the largest choice set given a choice grammar (0-100 inclusive is GAMA-Bench's widest)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
_FIGURE = r"-?\d+(?:\.\d+)?"
# "3 out of 7", "3 of 7", "3 of the 7", "4/7": the scale after the number is not a choice
_SCALE = re.compile(rf"(?<![\w.])({_FIGURE})\s*(?:/\s*|\s(?:out\s+)?of\s+(?:(?:the|my|your)\s+)?)\d+(?:\.\d+)?(?!\w|\.\d)",
                    re.IGNORECASE)
# "not 5", "never 5", "rather than 5", "instead of 5": a number the reply turns down
_REFUSED_NUMBER = re.compile(rf"(?:\bnot|\bnever|\brather\s+than|\binstead\s+of)\s+(?:(?:a|the)\s+)?{_FIGURE}(?!\w|\.\d)",
                             re.IGNORECASE)
_NEGATION = r"(?:\bnot|\bnever|n't)(?:\s+[\w']+){0,2}?\s+"  # "not", "won't", "do not want to": up to 2 words on
# A one-letter option that is also an English word ("a", "I") followed by a word is that word of a sentence:
# the article ("a side"), the pronoun ("I pick"); not before "or", "and" ("A or B" names both)
_WORD_LETTERS = frozenset("aAiI")
_IN_SENTENCE = r"(?![\s'\u2019]+(?!(?:or|and|nor|vs)\b)[A-Za-z])"
# Words that commit to the number right after them (one word may come between: "bid of 50", "give them 4")
_COMMITMENT = re.compile(
    r"\b(?:bid|bids|bidding|offer|offers|offering|keep|keeps|keeping|choose|chooses|choosing|pick|picks|"
    r"picking|select|selects|guess|guesses|contribute|contributes|contributing|give|gives|giving|take|takes|taking|"
    r"put|puts|donate|donates|donating|propose|proposes|request|requests|ask|asks|answer|choice|decision|go|"
    r"invest|invests|catch|harvest|vote|votes|play|plays)\b\W+(?:[A-Za-z]+\W+)?"
    rf"({_FIGURE})(?!\w|\.\d)", re.IGNORECASE)
_TOKEN = re.compile(rf"{_FIGURE}|\w+|[^\w\s]")


def committed_numbers(text: str) -> str:
    """The reply with the numbers it does not commit to taken out: a scale ("3 out of 7" is 3,
    "4/7" is 4) and a number it turns down ("3, not 5" is 3)."""
    return _REFUSED_NUMBER.sub(" ", _SCALE.sub(r"\1", text))


def echoed_numbers(text: str, asked: str) -> str:
    """The reply with the numbers it copies from the question taken out: a number inside a run
    of three words (numbers and punctuation count as words) that the question has as they are
    ("Round 1 of 3:", "item is 69."), any case. A number the reply writes on its own ("69.",
    "I bid 69") is its own."""
    if not asked:
        return text
    said = [(found.group(), found.start(), found.end()) for found in _TOKEN.finditer(text)]
    question = [token.lower() for token in _TOKEN.findall(asked)]
    runs = {tuple(question[index:index + 3]) for index in range(len(question) - 2)}
    words = [token.lower() for token, _, _ in said]
    echoed = []
    for index, (token, start, end) in enumerate(said):
        if _NUMBER.fullmatch(token) and any(tuple(words[first:first + 3]) in runs
                                           for first in range(max(0, index - 2), index + 1) if first + 3 <= len(words)):
            echoed.append((start, end))
    for start, end in reversed(echoed):
        text = text[:start] + " " + text[end:]
    return text


def named_labels(labels: Sequence[str], text: str) -> tuple[list[str], list[str]]:
    """(the labels `text` names as whole words, any case, not only after a negation, the
    one-letter labels "A" and "I" only where they stand alone; those it names only after a
    negation: "I will not volunteer")."""
    named, refused = [], []
    for label in labels:
        word = rf"(?<!\w){re.escape(label)}(?!\w)" + (_IN_SENTENCE if label in _WORD_LETTERS else "")
        mentions = len(re.findall(word, text, re.IGNORECASE))
        negated = len(re.findall(_NEGATION + word, text, re.IGNORECASE))
        if mentions > negated:
            named.append(label)
        elif mentions:
            refused.append(label)
    return named, refused


def _unnamed(what: str, refused: list[str]) -> str:
    return f"names no {what}" + (f" (it names {', '.join(refused)} only after a negation)" if refused else "")


class Choice:
    """Base of the kinds of choice; subclasses are frozen dataclasses. `key` (every kind takes
    it): the reply is JSON-like, `{"KEY": VALUE}`, as GAMA-Bench's prompts ask; only VALUE is
    read (a reply with no such key is read whole), and a player's reply is written so."""

    kind: ClassVar[str] = ""
    key: str = ""

    def focus(self, text: str) -> str:
        """The part of a reply that answers: the value of `key` where the reply gives one."""
        if not self.key:
            return text
        found = re.search(rf"""["']?{re.escape(self.key)}["']?\s*:\s*(\[[^\]]*\]|"[^"]*"|'[^']*'|[^,}}\n]+)""", text)
        return found.group(1).strip("\"' ") if found else text

    def keyed(self, text: str) -> str:
        return f'{{"{self.key}": "{text}"}}' if self.key else text

    @property
    def options(self) -> tuple[str, ...]:
        return ()

    def instruction(self) -> str:
        raise NotImplementedError

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        """(the choice's text, None) or (None, the problem); `asked` is the question the reply
        answers (what it repeats of it is no answer)."""
        raise NotImplementedError

    def text(self, value: Any) -> str:
        return str(value)

    def value(self, text: str) -> Any:
        return text

    def reply(self, value: Any) -> str:
        """What a player answering `value` writes: the text and a full stop, so that no reply of
        a choice grammar begins another ("1." and "10."); with a `key`, as JSON."""
        return self.keyed(self.text(value)) if self.key else f"{self.text(value)}."

    def grammar(self) -> Grammar:
        options = self.options
        return Grammar.choice({option: self.reply(self.value(option)) for option in options})

    def draw(self, rng: random.Random) -> Any:
        raise NotImplementedError

    def spec(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class Options(Choice):
    """One of a few labelled options: `Options("accept", "reject")`, `Options("go", "stay")`."""

    labels: tuple[str, ...]
    kind: ClassVar[str] = "options"

    def __init__(self, *labels: str, key: str = "") -> None:
        object.__setattr__(self, "key", key)
        if len(labels) == 1 and not isinstance(labels[0], str):
            labels = tuple(labels[0])
        if len(labels) < 2 or len({label.lower() for label in labels}) != len(labels) or not all(labels):
            raise ParameterError(f"Options takes two or more distinct, non-empty labels (got {labels!r})")
        object.__setattr__(self, "labels", tuple(labels))

    @property
    def options(self) -> tuple[str, ...]:
        return self.labels

    def instruction(self) -> str:
        return _format(self, f"exactly one of: {', '.join(self.labels)}")

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        found, refused = named_labels(self.labels, self.focus(text))
        if len(found) == 1:
            return found[0], None
        return None, ("names several options: " + ", ".join(found) if found else _unnamed("option", refused))

    def draw(self, rng: random.Random) -> str:
        return self.labels[rng.randrange(len(self.labels))]

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "labels": list(self.labels), "key": self.key}


@dataclass(frozen=True)
class Target(Options):
    """Another live player of the round, by name; the layer fills in the names when it asks
    (`Target()` in a game), and the game gets the `Player` back."""

    kind: ClassVar[str] = "target"

    def __init__(self, *names: str, key: str = "") -> None:
        object.__setattr__(self, "labels", tuple(names))
        object.__setattr__(self, "key", key)

    def instruction(self) -> str:
        return _format(self, f"the name of exactly one player: {', '.join(self.labels)}")

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        text = self.focus(text)
        if not self.labels:
            return None, "has no player to choose from"
        found, refused = named_labels(self.labels, text)
        if len(found) == 1:
            return found[0], None
        return None, ("names several players: " + ", ".join(found) if found else _unnamed("player among the choices", refused))


@dataclass(frozen=True, kw_only=True)
class Number(Choice):
    """A number from `low` to `high` (both included): whole numbers unless `integer=False`."""

    low: float
    high: float
    integer: bool = True
    kind: ClassVar[str] = "number"

    def __init__(self, low: float, high: float, *, integer: bool = True, key: str = "") -> None:
        object.__setattr__(self, "key", key)
        if not low < high or (integer and (int(low) != low or int(high) != high)):
            raise ParameterError(f"Number needs low < high{', both whole' if integer else ''} (got {low}, {high})")
        object.__setattr__(self, "low", int(low) if integer else float(low))
        object.__setattr__(self, "high", int(high) if integer else float(high))
        object.__setattr__(self, "integer", integer)

    @property
    def options(self) -> tuple[str, ...]:
        if self.integer and self.high - self.low < SMALL:
            return tuple(str(value) for value in range(int(self.low), int(self.high) + 1))
        return ()

    def instruction(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        return _format(self, f"{kind} from {self.text(self.low)} to {self.text(self.high)}")

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        focused = self.focus(text)
        own = committed_numbers(echoed_numbers(focused, asked))
        found = _NUMBER.findall(own)
        if not found:
            return None, "names no number of its own (it repeats the question's)" if _NUMBER.search(focused) else \
                "names no number"
        chosen = found[-1]
        if len(set(map(float, found))) > 1:
            committed = _COMMITMENT.findall(own)
            if len(set(map(float, committed))) > 1:
                return None, f"commits to several numbers: {', '.join(dict.fromkeys(committed))}"
            if committed:
                chosen = committed[0]
            else:
                tail = _NUMBER.search(own.rstrip().rstrip(".!*)\"'`").split()[-1] if own.split() else "")
                if tail is None or tail.group() != found[-1]:
                    return None, "names several numbers, none of them committed to or at the end"
        number = float(chosen)
        if self.integer and number != int(number):
            return None, f"{chosen} is not a whole number"
        if not self.low <= number <= self.high:
            return None, f"{chosen} is not from {self.text(self.low)} to {self.text(self.high)}"
        return self.text(number), None

    def text(self, value: Any) -> str:
        number = float(value)
        return str(int(number)) if self.integer or number == int(number) else f"{number:g}"

    def value(self, text: str) -> float | int:
        return int(text) if self.integer else float(text)

    def grammar(self) -> Grammar:
        if self.options:
            return super().grammar()
        number = r"-?[0-9]+" if self.integer else r"-?[0-9]+(?:\.[0-9]+)?"
        return Grammar(kind="regex", value=_keyed_pattern(self.key, number) if self.key else
                       number + (r"\." if self.integer else ""))

    def reply(self, value: Any) -> str:
        if self.key:
            return self.keyed(self.text(value))
        return f"{self.text(value)}." if self.integer else self.text(value)

    def draw(self, rng: random.Random) -> float | int:
        if self.integer:
            return rng.randint(int(self.low), int(self.high))
        return round(rng.uniform(self.low, self.high), 2)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "low": self.low, "high": self.high, "integer": self.integer, "key": self.key}


@dataclass(frozen=True)
class Split(Choice):
    """A budget `total` split among `parts` shares (in order; `labels` names them in the
    prompt): e.g. a proposal of how 100 coins go to each of 5 pirates."""

    parts: int
    total: float
    integer: bool = True
    labels: tuple[str, ...] = ()
    key: str = ""
    kind: ClassVar[str] = "split"

    def __post_init__(self) -> None:
        if self.parts < 2 or self.total <= 0 or (self.labels and len(self.labels) != self.parts):
            raise ParameterError(f"Split needs 2 or more parts, a positive total and a label per part if any "
                                 f"(got parts={self.parts}, total={self.total}, labels={self.labels!r})")
        object.__setattr__(self, "labels", tuple(self.labels))

    def instruction(self) -> str:
        whom = f" (in this order: {', '.join(self.labels)})" if self.labels else ""
        kind = "whole numbers" if self.integer else "numbers"
        return _format(self, f"{self.parts} {kind}{whom}, separated by commas, that are not negative and add up to "
                             f"{_plain(self.total)}")

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        found = [float(number) for number in _NUMBER.findall(self.focus(text))]
        if len(found) != self.parts:
            return None, f"names {len(found)} numbers, not {self.parts}"
        if any(number < 0 for number in found):
            return None, "has a negative share"
        if self.integer and any(number != int(number) for number in found):
            return None, "has a share that is not a whole number"
        if not math.isclose(sum(found), self.total, abs_tol=1e-6):
            return None, f"adds up to {_plain(sum(found))}, not {_plain(self.total)}"
        return self.text(found), None

    def text(self, value: Any) -> str:
        return ",".join(_plain(number, self.integer) for number in value)

    def value(self, text: str) -> tuple[float | int, ...]:
        return tuple(int(part) if self.integer else float(part) for part in text.split(","))

    def reply(self, value: Any) -> str:
        return self.keyed(", ".join(_plain(number, self.integer) for number in value))

    def grammar(self) -> Grammar:
        number = r"[0-9]+" if self.integer else r"[0-9]+(?:\.[0-9]+)?"
        shares = number + f"(?:, ?{number}){{{self.parts - 1}}}"
        return Grammar(kind="regex", value=_keyed_pattern(self.key, shares) if self.key else shares)

    def draw(self, rng: random.Random) -> tuple[float | int, ...]:
        """Uniform over the splits (stars and bars for whole numbers)."""
        if self.integer:
            total = int(self.total)
            cuts = sorted(rng.sample(range(total + self.parts - 1), self.parts - 1))
            edges = [-1, *cuts, total + self.parts - 1]
            return tuple(edges[i + 1] - edges[i] - 1 for i in range(self.parts))
        points: list[float] = sorted(rng.uniform(0, self.total) for _ in range(self.parts - 1))
        bounds: list[float] = [0.0, *points, float(self.total)]
        shares: list[float] = [round(bounds[i + 1] - bounds[i], 2) for i in range(self.parts)]
        shares[-1] = round(self.total - sum(shares[:-1]), 2)
        return tuple(shares)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "parts": self.parts, "total": self.total, "integer": self.integer,
                "labels": list(self.labels), "key": self.key}


def _format(choice: Choice, what: str) -> str:
    if choice.key:
        return f'Answer in JSON, as {{"{choice.key}": "..."}}, with {what}.'
    return f"Answer with {what}, and nothing else."


def _keyed_pattern(key: str, value: str) -> str:
    return re.escape(f'{{"{key}": "') + value + re.escape('"}')


def _plain(number: float, integer: bool = False) -> str:
    return str(int(number)) if integer or number == int(number) else f"{number:g}"


def choice_from_spec(spec: dict[str, Any]) -> Choice:
    """The choice `Choice.spec` gave `spec` for (what the store keeps with each call)."""
    kind, key = spec.get("kind"), str(spec.get("key") or "")
    if kind == "options":
        return Options(*spec["labels"], key=key)
    if kind == "target":
        return Target(*spec["labels"], key=key)
    if kind == "number":
        return Number(spec["low"], spec["high"], integer=bool(spec["integer"]), key=key)
    if kind == "split":
        return Split(int(spec["parts"]), spec["total"], bool(spec["integer"]), tuple(spec.get("labels") or ()), key)
    raise ValueError(f"not a choice: {spec!r}")


def as_choice(value: Choice | Sequence[str]) -> Choice:
    """A choice, or a list of labels as `Options`."""
    return value if isinstance(value, Choice) else Options(*value)
