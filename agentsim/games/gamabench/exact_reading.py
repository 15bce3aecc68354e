"""Replies read as GAMA-Bench's runner reads them (GAMA-Bench-exact mode): `RunnerAnswer`, a
choice of agentsim's game layer whose `read` takes what the runner takes and refuses what it
re-asks, for each game and move.

Written from the runner's behaviour (docs/reproducing-gamabench.md lists it beside agentsim's
own readers): the reply is stripped, then read as JSON, whole (Guessing, Bar, Divide the
Dollar, Diner, Battle Royale) or from its first `{` to its last `}` (Public Goods, the
auction), or for the Pirate Game from the `{` before the last `"proposal"` (`"decision"`;
`"explanation"` with chain-of-thought) to the last `}`, backslashes dropped first. A number is
Python's `int()` of the value (any whole number, "7" and 7.9 alike; Guess 2/3 of the Average
alone asks again outside the range its runner checks, 0 to 100 as published: `within`); a
choice of words is the value lowercased (the bar's must be go or stay; the diner's is any word,
all but `cheap` counting as costly); a vote is accept
where the value contains "accept" or "Accept", else reject where it contains "reject" or
"Reject"; a proposal is the `proposal` object, its values `int()`, of the size and sum asked;
a Battle Royale target is the `target` (null: a miss on purpose; "player_3" read as "3"), or,
where the reply is no JSON, what follows `"target":` (as the runner's fallback reads it).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from ...gamekit.choices import Choice
from ...llm.base import Grammar

NUMBER_KEYS = {"guessing_game": "chosen_number", "divide_dollar": "bid_amount", "public_goods": "tokens_contributed",
               "sealed_bid_auction": "bid"}
WORD_KEYS = {"bar_game": "decision", "diner_dilemma": "chosen_dish"}
BRACED = ("public_goods", "sealed_bid_auction")  # read from the first { to the last }
MISS = "null"


class Unreadable(Exception):
    """What the runner would ask again for."""


@dataclass(frozen=True, kw_only=True)
class RunnerAnswer(Choice):
    """A GAMA-Bench answer read as its runner reads it. `game` and `move` ("choose", "shoot",
    "propose", "vote") say which reader; `labels` are the canonical answers (the stand-in's
    and a fallback's, a choice grammar's where few), `low`/`high` a number's range for them,
    `parts`/`total` a proposal's size and sum (`low` the proposer's seniority, from 1), `cot` whether the runner asked for an
    explanation first (the Pirate Game reads from a different key then)."""

    game: str
    move: str = "choose"
    labels: tuple[str, ...] = ()
    low: int = 0
    high: int = 0
    parts: int = 0
    total: int = 0
    cot: bool = False
    within: tuple[int, int] | None = None  # the range the runner asks a number again outside of (Guess 2/3: 0-100)
    kind: ClassVar[str] = "gamabench"

    @property
    def options(self) -> tuple[str, ...]:
        return self.labels

    def instruction(self) -> str:
        return ""  # the runner's own answer format is in the request

    def read(self, text: str, asked: str = "") -> tuple[str | None, str | None]:
        try:
            return self._read(text.strip()), None
        except Unreadable as why:
            return None, str(why)
        except Exception as error:  # what the runner catches and asks again for
            return None, f"is not an answer GAMA-Bench's runner reads ({type(error).__name__}: {error})"

    def _read(self, text: str) -> str:
        game, move = self.game, self.move
        if game in NUMBER_KEYS:
            document = json.loads(text[text.find("{"):text.rfind("}") + 1] if game in BRACED else text)
            number = int(document[NUMBER_KEYS[game]])
            if self.within is not None and not self.within[0] <= number <= self.within[1]:
                raise Unreadable(f"{number} is not from {self.within[0]} to {self.within[1]} (the runner asks again)")
            return str(number)
        if game in WORD_KEYS:
            word = json.loads(text)[WORD_KEYS[game]].lower()
            if game == "bar_game" and word not in ("go", "stay"):
                raise Unreadable(f"{word!r} is neither go nor stay (the runner asks again)")
            return str(word)
        if game == "battle_royale":
            return _target(text)
        if game == "pirate_game" and move == "propose":
            plan = dict(json.loads(_braced(text.replace("\\", ""), '"explanation"' if self.cot else '"proposal"'))["proposal"])
            shares = [int(gold) for gold in plan.values()]
            if sum(shares) != self.total or len(shares) != self.parts:
                raise Unreadable(f"a plan of {len(shares)} shares adding up to {sum(shares)}, not {self.parts} adding up "
                                 f"to {self.total} (the runner asks again)")
            return json.dumps(plan)
        if game == "pirate_game":
            decision = json.loads(_braced(text.replace("\\", ""), '"explanation"' if self.cot else '"decision"'))["decision"]
            if "accept" in decision or "Accept" in decision:
                return "accept"
            if "reject" in decision or "Reject" in decision:
                return "reject"
            raise Unreadable("names neither accept nor reject (the runner asks again)")
        raise ValueError(f"no GAMA-Bench reader for {game} {move}")

    def text(self, value: Any) -> str:
        if self.game == "pirate_game" and self.move == "propose":
            return value if isinstance(value, str) else json.dumps(value)
        return str(value)

    def value(self, text: str) -> Any:
        if self.game in NUMBER_KEYS:
            return int(text)
        if self.game == "pirate_game" and self.move == "propose":
            return json.loads(text)
        return text

    def reply(self, value: Any) -> str:
        """The reply a player answering `value` writes, as the runner's own report writes it back."""
        if self.game in NUMBER_KEYS:
            return json.dumps({NUMBER_KEYS[self.game]: str(value)})
        if self.game in WORD_KEYS:
            return json.dumps({WORD_KEYS[self.game]: str(value)})
        if self.game == "battle_royale":
            target = str(value)
            return json.dumps({"action": "miss" if target == MISS else "shoot", "target": target})
        if self.move == "propose":
            plan = value if isinstance(value, dict) else json.loads(value) if isinstance(value, str) else {
                f"{seat}-th": str(gold) for seat, gold in enumerate(value, start=self.low)}
            return json.dumps({"proposal": plan})
        return json.dumps({"decision": str(value)})

    def grammar(self) -> Grammar:
        if self.labels:
            return Grammar.choice({label: self.reply(self.value(label)) for label in self.labels})
        if self.game in NUMBER_KEYS:
            return Grammar(kind="regex", value=re.escape(f'{{"{NUMBER_KEYS[self.game]}": "') + "-?[0-9]+" + re.escape('"}'))
        number = '"[0-9]+"'
        return Grammar(kind="regex", value=re.escape('{"proposal": {') + f'"[0-9]+-th": {number}(, "[0-9]+-th": {number})*'
                       + re.escape("}}"))

    def draw(self, rng: random.Random) -> Any:
        if self.labels:
            return self.value(self.labels[rng.randrange(len(self.labels))])
        if self.move == "propose":
            cuts = sorted(rng.sample(range(self.total + self.parts - 1), self.parts - 1))
            edges = [-1, *cuts, self.total + self.parts - 1]
            return {f"{seat}-th": edges[index + 1] - edges[index] - 1 for index, seat in
                    enumerate(range(self.low, self.low + self.parts))}
        return rng.randint(self.low, self.high)

    def spec(self) -> dict[str, Any]:
        return {"kind": self.kind, "game": self.game, "move": self.move, "labels": list(self.labels), "low": self.low,
                "high": self.high, "parts": self.parts, "total": self.total, "cot": self.cot,
                "within": list(self.within) if self.within is not None else None}


def answer_from_spec(spec: dict[str, Any]) -> RunnerAnswer:
    return RunnerAnswer(game=str(spec["game"]), move=str(spec["move"]), labels=tuple(spec.get("labels") or ()),
                        low=int(spec.get("low", 0)), high=int(spec.get("high", 0)), parts=int(spec.get("parts", 0)),
                        total=int(spec.get("total", 0)), cot=bool(spec.get("cot")),
                        within=(int(spec["within"][0]), int(spec["within"][1])) if spec.get("within") else None)


def _braced(text: str, key: str) -> str:
    """The runner's cut of a Pirate Game reply: from the `{` before the last `key` to the last `}` after it."""
    at = text.rfind(key)
    start = text.rfind("{", 0, at)
    end = start + text[start:].rfind("}")
    return text[start:end + 1]


def _target(text: str) -> str:
    """A Battle Royale reply's target, as the runner reads it: the JSON's `target`, else what
    follows `"target":` in the text."""
    try:
        document = json.loads(text)
        document["action"]  # the runner reads it: a reply without it takes the other path
        target = document["target"]
    except Exception:
        found = re.search(r'"target":\s*(\d+|"[^"]+"|null)', text)
        named = found.group(1).strip('"') if found else None
        if named is None or named == "playerID_or_null":
            raise Unreadable("names no target (the runner asks again)") from None
        try:
            return str(named[1].split("_")[1])
        except IndexError:
            if "player" in named:
                return str(named.split("_")[1])
            return named
    if target is None:
        return MISS
    if target == "playerID_or_null":
        raise Unreadable("answers with the format's placeholder (the runner asks again)")
    try:
        return str(target.split("_")[1])
    except Exception:
        return str(target)
