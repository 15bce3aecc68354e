"""The stand-in's rule for SIGN prompts: one name choice, written in the format the prompt asks.

In process it is given the agent's situation with the request (the lexicon, its current
proposal, the partner names in its memory, whether the prompt demands the `@say {name: Ck}`
schema); over HTTP it reads the same from the prompt text (any of the SIGN templates it is
given; the NL prompt shows no memory). Its dice come from the request's seed.

Choosing a name (the same in every condition; the names are fields of `SignStandInSettings`, the
scenario's `standin`):

1. with probability `noise`, a draw from its prior: the favoured name `bias_name` with
   probability `bias`, otherwise a name uniformly at random;
2. otherwise, if the memory's most common name (ties: the most recent of them) differs from
   the current proposal, that name with probability `follow_memory`;
3. otherwise the current proposal.

Writing it down (where the conditions differ, as the paper reports of small models):

- free text: with probability `free_none_rate` a line that names no valid name (no name at
  all, or one outside the lexicon such as C13); with probability `free_several_rate` a line
  that names two; otherwise a sentence naming exactly the chosen name, in one of a few
  phrasings;
- schema: with probability `schema_error_rate` (times `retry_error_rate` on the retry that
  follows the reminder) a non-compliant line: `say C3`, `@say {name: "C3"}`,
  `@say {name: C3} | rationale`, prose, a lower-case `c3`, or the placeholder `Ck` echoed;
  otherwise exactly `@say {name: C3}`. A request that carries a grammar (constrained
  decoding) always gets the compliant line, as a server enforcing it would return.

So the conditions differ on the stand-in too: NL sees no memory and NL free text sometimes
decodes to nothing; Schema replies are sometimes non-compliant, and the retry and the
free-text decoding recover most of those names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...llm.base import Request
from ...params import StandInSettings, require
from ...prompts import PromptTemplate
from ...seeding import unit_uniforms
from .situation import SignSituation

_WANTED = ("lexicon", "current", "history")


@dataclass(frozen=True, kw_only=True)
class SignStandInSettings(StandInSettings):
    """The SIGN stand-in's rule (the module's docstring says how each is used);
    `--set standin.schema_error_rate=0.5`. `bias_name` must be in the lexicon."""

    bias_name: str | None = None
    bias: float = 0.0
    noise: float = 0.05
    follow_memory: float = 0.6
    free_none_rate: float = 0.15
    free_several_rate: float = 0.1
    schema_error_rate: float = 0.2
    retry_error_rate: float = 0.3

    def validate(self) -> None:
        self.require_rates("bias", "noise", "follow_memory", "free_none_rate", "free_several_rate", "schema_error_rate",
                           "retry_error_rate")
        require(self.free_none_rate + self.free_several_rate <= 1,
                "standin.free_none_rate + standin.free_several_rate must be at most 1")


class SignStandIn:
    def __init__(self, templates: Sequence[PromptTemplate], settings: SignStandInSettings = SignStandInSettings()) -> None:
        self.templates = [(template, "@say" in template.sections["system"]) for template in templates]
        self.settings = settings
        self.bias_name = settings.bias_name
        self.bias = settings.bias
        self.noise = settings.noise
        self.follow_memory = settings.follow_memory
        self.free_none_rate = settings.free_none_rate
        self.free_several_rate = settings.free_several_rate
        self.schema_error_rate = settings.schema_error_rate
        self.retry_error_rate = settings.retry_error_rate

    def answer(self, request: Request) -> str | None:
        situation = request.situation
        if situation is None:
            read = self.read(request)
            if read is None:
                return None
            names, current, memory, schema = read
        elif isinstance(situation, SignSituation):
            names, current, memory, schema = list(situation.options), situation.current, list(situation.memory), situation.schema
        else:
            return None
        noise_die, follow_die, prior_die, format_die, variant_die = unit_uniforms(request.seed or 0, 5)
        name = self.choose(names, current, memory, noise_die, follow_die, prior_die)
        if schema:
            retry = len(request.messages) > 2
            return self.write_schema(name, retry, request.grammar is not None, format_die, variant_die)
        return self.write_free(name, names, format_die, variant_die)

    def read(self, request: Request) -> tuple[list[str], str, list[str], bool] | None:
        """The lexicon, current proposal, memory and whether the schema is demanded, read from
        the prompt text with the first template that fits; None if none does."""
        if not request.messages or request.messages[0].role != "system":
            return None
        system = request.messages[0].content
        for template, schema in self.templates:
            fields = template.read("system", system, only=_WANTED)
            if fields is not None and "lexicon" in fields and "current" in fields:
                memory = self._memory(template, fields.get("history") or "")
                return fields["lexicon"].split(", "), fields["current"], memory, schema
        return None

    @staticmethod
    def _memory(template: PromptTemplate, history: str) -> list[str]:
        history = history.rstrip("\n")
        if not history or "history" not in template.sections:
            return []
        read = template.read("history", history)
        return read["entries"].split(" | ") if read else []

    def choose(self, names: Sequence[str], current: str, memory: Sequence[str], noise_die: float,
               follow_die: float, prior_die: float) -> str:
        if noise_die < self.noise:
            return self.prior(names, prior_die)
        if memory:
            counts: dict[str, int] = {}
            for seen in memory:
                counts[seen] = counts.get(seen, 0) + 1
            most = max(counts.values())
            favourite = next(seen for seen in reversed(memory) if counts[seen] == most)
            if favourite != current and follow_die < self.follow_memory:
                return favourite
        return current

    def prior(self, names: Sequence[str], die: float) -> str:
        if self.bias_name is not None and self.bias_name in names and self.bias > 0:
            if die < self.bias:
                return self.bias_name
            die = (die - self.bias) / (1 - self.bias) if self.bias < 1 else 0.0
        return names[min(int(die * len(names)), len(names) - 1)]

    def write_free(self, name: str, names: Sequence[str], format_die: float, variant_die: float) -> str:
        if format_die < self.free_none_rate:
            outside = f"C{len(names) + 1}"
            return ("I would like to propose a name that we can both remember easily.",
                    f"I propose {outside} for this round.",
                    "Let me think about which name works best for both of us.")[int(variant_die * 3)]
        if format_die < self.free_none_rate + self.free_several_rate:
            other = names[(names.index(name) + 1 + int(variant_die * (len(names) - 1))) % len(names)]
            return f"I propose {name}, but {other} would work for me too."
        return (f"I propose the name {name}.", f"Let's go with {name}!", f"My proposal: {name}",
                f"{name} sounds good to me.")[int(variant_die * 4)]

    def write_schema(self, name: str, retry: bool, constrained: bool, format_die: float, variant_die: float) -> str:
        error_rate = self.schema_error_rate * (self.retry_error_rate if retry else 1.0)
        if constrained or format_die >= error_rate:
            return f"@say {{name: {name}}}"
        return (f"say {name}", f'@say {{name: "{name}"}}', f"@say {{name: {name}}} | it matches my memory",
                f"I propose {name}.", f"@say {{name: {name.lower()}}}", "@say {name: Ck}")[int(variant_die * 6)]
