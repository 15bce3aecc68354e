"""The stand-in's rule for naming-game prompts.

In process it is given the agent's situation with the request (the options in the order shown
and the memory: what the prompt shows, nothing more); over HTTP, from the stand-in server, it
reads the same from the prompt text (the options and the history of the agent's last
interactions, from any of the naming templates it is given). It answers in the prompt's
answer-first format `{'value': NAME; 'reason': ...}`. The rule, in order (the names are
fields of `NamingStandInSettings`, the scenario's `standin`):

1. with probability `invalid_rate`, an unusable reply: half of the time one that names no
   option, half of the time one that names two (to exercise re-asks and fallbacks);
2. with probability `noise`, or with an empty memory, a draw from its prior: the favoured name
   `bias_name` with probability `bias`, otherwise a name uniformly at random (the order the
   options were shown in plays no part);
3. win-stay: if the last interaction succeeded, the same name again;
4. lose-shift by memory: otherwise the name partners played most often in memory; a tie goes
   to the favoured name if it is tied, else to the most recently seen of the tied names.

That is the behaviour the paper reports of its LLM agents (Table 1: "agents generally adhere to
a winning convention but switch to their co-player's convention following failure"), with a
best response to memory that gives committed minorities a tipping point. Its three dice come
from the request's seed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from ...llm.base import Request
from ...params import StandInSettings
from ...prompts import PromptTemplate
from ...seeding import unit_uniforms
from .situation import NamingSituation

_ANSWER_KEY = re.compile(r"\{'(\w+)': <")
_WANTED = ("options", "options_text", "history")


@dataclass(frozen=True, kw_only=True)
class NamingStandInSettings(StandInSettings):
    """The naming stand-in's rule (the module's docstring says how each is used);
    `--set standin.bias_name=M`. `bias_name` must be in the experiment's name pool."""

    bias_name: str | None = None  # the favoured name of the prior
    bias: float = 0.0  # its probability on top of a uniform draw
    noise: float = 0.0  # exploration: a draw from the prior whatever the memory says
    invalid_rate: float = 0.0  # an unusable reply

    def validate(self) -> None:
        self.require_rates("bias", "noise", "invalid_rate")


class NamingStandIn:
    def __init__(self, templates: Sequence[PromptTemplate],
                 settings: NamingStandInSettings = NamingStandInSettings()) -> None:
        """`templates[0]` is the game's own (its answer key words the in-process replies); the
        others are what a prompt read over HTTP may have been rendered from."""
        self.templates = [(template, _answer_key(template)) for template in templates]
        self.settings = settings
        self.bias_name = settings.bias_name
        self.bias = settings.bias
        self.noise = settings.noise
        self.invalid_rate = settings.invalid_rate

    def answer(self, request: Request) -> str | None:
        situation = request.situation
        if isinstance(situation, NamingSituation):
            key = self.templates[0][1]
            options: Sequence[str] = situation.options
            memory: Sequence[tuple[Any, ...]] = situation.memory  # (own, partner, payoff): the first two are read
        elif situation is None:
            read = self.read(request)
            if read is None:
                return None
            key, options, memory = read
        else:
            return None  # another game's situation
        seed = request.seed or 0
        # The dice are a function of the seed alone, so they are rolled only where needed.
        invalid_die, noise_die, _ = unit_uniforms(seed, 3) if self.invalid_rate or self.noise else (1.0, 1.0, 1.0)
        if invalid_die < self.invalid_rate:
            if invalid_die < self.invalid_rate / 2 or len(options) < 2:
                return f"{{'{key}': <{key.upper()}_OF_PLAYER_1>; 'reason': 'not sure yet'}}"
            return f"{{'{key}': {options[0]} or {options[1]}; 'reason': 'either works'}}"
        name, reason = self.choose(options, memory, noise_die, seed)
        return f"{{'{key}': {name}; 'reason': '{reason}'}}"

    def read(self, request: Request) -> tuple[str, list[str], list[tuple[str | None, str | None]]] | None:
        """The answer key, options and memory (own, partner) a prompt shows, read from its
        text with the first template that fits; None if none does."""
        if not request.messages or request.messages[0].role != "system":
            return None
        system = request.messages[0].content
        for template, key in self.templates:
            fields = template.read("system", system, only=_WANTED)
            if fields is not None:
                history = fields.get("history") or ""
                memory = template.findall("entry", history, "own", "partner") if history else []
                return key, read_options(fields), [(own, partner) for own, partner in memory]
        return None

    def choose(self, options: Sequence[str], memory: Sequence[tuple[Any, ...]], noise_die: float,
               seed: int) -> tuple[str, str]:
        """Steps 2-4 of the rule; `seed` gives the die of a draw from the prior."""
        if noise_die < self.noise or not memory:
            return self.prior(options, seed), "no history yet" if not memory else "trying another name"
        name, reason = self.follow(options, memory)
        if name is None:
            return self.prior(options, seed), reason
        return name, reason

    def follow(self, options: Sequence[str], memory: Sequence[tuple[Any, ...]]) -> tuple[str | None, str]:
        """Steps 3-4 of the rule for a non-empty memory: the name it dictates, or None when
        the memory dictates nothing (then the prior decides)."""
        own, partner = memory[-1][0], memory[-1][1]
        if own == partner and own in options:
            return own, "it worked last round"
        counts = {seen: count for seen, count in Counter(map(itemgetter(1), memory)).items()  # (counted in C)
                  if seen is not None and seen in options}
        if not counts:
            return None, "nothing in memory to follow"
        most = max(counts.values())
        tied = [name for name, count in counts.items() if count == most]
        if self.bias_name in tied:
            return self.bias_name, "partners played it most"
        for entry in reversed(memory):
            if entry[1] in tied:
                return entry[1], "partners played it most"
        return None, "no clear favourite"  # pragma: no cover - a tied name is always in memory

    def probabilities(self, situation: NamingSituation) -> dict[str, float]:
        """The exact probability of each option under this rule for a valid reply: what a
        strategy table measured by sampling the stand-in must recover. Unusable replies
        (`invalid_rate`) are re-asked and fall back by the game's policy, outside this rule."""
        options = list(situation.options)
        memory = [(entry[0], entry[1]) for entry in situation.memory]
        prior = self.prior_probabilities(options)
        if not memory:
            return prior
        name, _ = self.follow(options, memory)
        dictated = prior if name is None else {option: float(option == name) for option in options}
        return {option: self.noise * prior[option] + (1 - self.noise) * dictated[option] for option in options}

    def prior_probabilities(self, options: Sequence[str]) -> dict[str, float]:
        """The distribution of `prior`: the favoured name gets `bias` on top of its uniform share."""
        uniform = 1.0 / len(options)
        if self.bias_name in options and self.bias > 0:
            return {option: (1 - self.bias) * uniform + (self.bias if option == self.bias_name else 0.0) for option in options}
        return dict.fromkeys(options, uniform)

    def prior(self, options: Sequence[str], seed: int) -> str:
        """The favoured name with probability `bias`, else a uniform draw."""
        die = unit_uniforms(seed, 3)[2]
        if self.bias_name is not None and self.bias_name in options and self.bias > 0:
            if die < self.bias:
                return self.bias_name
            die = (die - self.bias) / (1 - self.bias)
        ordered = sorted(options)
        return ordered[min(int(die * len(ordered)), len(ordered) - 1)]


def _answer_key(template: PromptTemplate) -> str:
    match = _ANSWER_KEY.search(template.sections["system"].replace("{{", "{"))
    return match.group(1) if match else "value"


def read_options(fields: Mapping[str, str]) -> list[str]:
    """The option list a naming prompt showed, from its `options` or `options_text` field."""
    listed = fields.get("options")
    if listed:
        return listed[1:-1].split(", ")
    spoken = fields.get("options_text", "")
    head, _, last = spoken.rpartition(" and ")
    return [name.strip() for name in head.split(",") if name.strip()] + [last.strip()] if head else [spoken.strip()]
