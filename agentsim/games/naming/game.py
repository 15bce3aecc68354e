"""The LLM naming game of Flint Ashery, Aiello and Baronchelli (Sci. Adv. 2025), as a scenario.

N agents; a pool of W names; each agent remembers its own last H interactions (its name, its
partner's name, the payoff) and sees its score over them. Two agents meet, each answers with a
name, and both get +100 if the names match, -50 if not. The prompt is the paper's supplementary
"Example Prompt" (or its narrative and bullet-point variants), with the option list shuffled
for every prompt and the answer-first reply format.

Subclass `NamingGame` and override a hook (`payoff`, `prompt_fields`, `remember`, `new_metrics`) to
make a new experiment; see examples/.
"""

from __future__ import annotations

import dataclasses
import random
import string
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Literal

from ...agents import PopulationAgent
from ...llm.base import Grammar, Sampling
from ...model import PopulationModel
from ...params import require
from ...parts import StandInPart
from ...policies import CommittedPolicy, LLMPolicy, Policy
from ...prompts import PromptTemplate
from ...records import Decision, EncounterRecord, Move
from ...scheduler import Encounter
from ..pairwise import PairwiseGame, PairwiseParams
from .answers import answer_replies
from .codec import NamingCodec
from .metrics import ConventionMetrics
from .readout import NamingReadout
from .situation import NamingSituation
from .standin import NamingStandIn, NamingStandInSettings

DRAWN_POOL_SIZE = 10  # W when neither names nor pool_size is given
_MAX_SHARED_ENTRIES = 100_000  # distinct memory entries a game shares between its agents


@dataclass(frozen=True, kw_only=True)
class NamingParams(PairwiseParams):
    """The shared parameters (`PairwiseParams`) and the naming game's own."""

    # the name pool, when `names` does not give it
    pool_size: int = DRAWN_POOL_SIZE  # W
    name_style: Literal["letters", "random"] = "letters"  # letters A-Z, or six-character strings
    constrained_decoding: bool = False  # send the answer format as a grammar, where the backend constrains decoding
    # committed minority
    committed: int = 0
    committed_fraction: float = 0.0
    committed_mode: Literal["replace", "add"] = "replace"
    committed_name: str | None = None
    majority_name: str | None = None  # start in consensus on this name
    stop_at: Literal["consensus", "flip", "none"] = "consensus"

    def validate(self) -> None:
        if self.names:
            # A pool_size the user set would otherwise be ignored without a word: W is len(names) here.
            require(self.pool_size in (DRAWN_POOL_SIZE, len(self.names)),
                    f"pool_size={self.pool_size} does not apply: the name pool is given ({', '.join(self.names)}); "
                    f"clear it with names= to draw pool_size names")
        else:
            require(self.pool_size >= 2, f"pool_size (W) must be at least 2 (got {self.pool_size})")
            if self.name_style == "letters":
                require(self.pool_size <= 26, f"pool_size {self.pool_size} is more than 26 letters; use name_style=random")
        require(self.committed >= 0, f"committed must be >= 0 (got {self.committed})")
        require(0 <= self.committed_fraction < 1, f"committed_fraction must be in [0, 1) (got {self.committed_fraction})")
        require(not (self.committed and self.committed_fraction),
                "give the committed minority as a count (committed) or a fraction (committed_fraction), not both")
        if self.committed_mode == "replace":
            require(self.committed_count() < self.agents,
                    f"{self.committed_count()} committed agents leave no uncommitted agent among agents={self.agents}; "
                    f"lower committed or use committed_mode=add")
        require(self.stop_at != "flip" or self.committed_count() > 0, "stop_at=flip needs a committed minority (set committed)")
        super().validate()

    def committed_count(self) -> int:
        """Committed agents as a count: a fraction is a share of the whole population."""
        if not self.committed_fraction:
            return self.committed
        if self.committed_mode == "replace":
            return round(self.committed_fraction * self.agents)
        return round(self.committed_fraction * self.agents / (1 - self.committed_fraction))

    def population_size(self) -> int:
        return self.agents + (self.committed_count() if self.committed_mode == "add" else 0)


class NamingGame(PairwiseGame[NamingParams, NamingSituation]):
    name = "naming_game"
    Params = NamingParams
    standin: NamingStandInSettings = NamingStandInSettings()
    summary_dtypes: ClassVar[Mapping[str, str]] = {
        "consensus": "boolean", "consensus_name": "string", "consensus_round": "Int64",
        "final_success_rate": "Float64", "final_agreement": "Float64", "leading_name": "string",
        "committed": "Int64", "committed_name": "string", "majority_name": "string", "flip": "boolean",
        "flip_round": "Int64", "final_alternative_share": "Float64", "final_alternative_choices": "Int64",
        "fallback_moves": "Int64",
    }
    round_dtypes: ClassVar[Mapping[str, str]] = {
        "interactions": "Int64", "successes": "Int64", "success_rate": "Float64", "productions.*": "count",
        "fallbacks": "Int64", "alternative_share": "Float64",
    }

    # --- the experiment ------------------------------------------------------------------
    def for_experiment(self, seed: int) -> NamingGame:
        """Draw the name pool once per experiment (all runs share it) and check the names the
        parameters refer to."""
        params = self.params
        names = params.names or generate_names(params.pool_size, params.name_style, seed)
        game = self if names == params.names else self.with_params(names=names)
        for key, value in (("committed_name", params.committed_name), ("majority_name", params.majority_name),
                           ("standin.bias_name", self.standin.bias_name)):
            require(value is None or value in names, f"{key} '{value}' is not in the name pool {', '.join(names)}")
        require(params.committed_name is None or params.committed_name != params.majority_name,
                "committed_name and majority_name must differ")
        return game

    @cached_property
    def template(self) -> PromptTemplate:
        return PromptTemplate.load("naming", self.params.prompt).require("system", "history", "entry", "user", "reminder") \
            .require_fields(system=("options|options_text", "history"), history=("entries",), entry=("own", "partner"),
                            reminder=("options|options_text",))

    @cached_property
    def codec(self) -> NamingCodec:
        """The prompt, the reading of replies and the store's encoding (codec.py)."""
        return NamingCodec(self)

    def committed_name(self) -> str:
        params = self.params
        if params.committed_name is not None:
            return params.committed_name
        return next(name for name in self.names if name != params.majority_name)

    def majority_name(self) -> str | None:
        params = self.params
        if params.majority_name is not None:
            return params.majority_name
        if params.committed_count():
            committed = self.committed_name()
            return next(name for name in self.names if name != committed)
        return None

    # --- hooks: population, pairing, encounters ------------------------------------------
    def build_population(self, model: PopulationModel) -> None:
        params = self.params
        for index in range(params.agents):
            PopulationAgent(model, self.agent_policy(model, index), memory_length=params.memory_length)
        count = params.committed_count()
        if count:
            committed = CommittedPolicy(self.committed_name())
            if params.committed_mode == "replace":
                agents = model.population  # (indexing the AgentSet itself copies it every time)
                for index in sorted(model.random.sample(range(params.agents), count)):
                    agents[index].policy = committed
            majority = self.majority_name()
            if majority is not None:
                self.fill_consensus(model, majority)
            if params.committed_mode == "add":
                for _ in range(count):
                    PopulationAgent(model, committed, memory_length=params.memory_length)
        elif (majority := self.majority_name()) is not None:
            self.fill_consensus(model, majority)

    def agent_policy(self, model: PopulationModel, index: int) -> Policy:
        """How uncommitted agent `index` decides: its backend's model (a theory baseline
        returns a rule policy here). Agents on one backend share one policy (it keeps nothing
        of an agent's): a population of a million holds one."""
        backend = model.backend_for(index)
        policy = model.shared_policies.get(id(backend))
        if policy is None:
            policy = model.shared_policies[id(backend)] = LLMPolicy(
                backend, self.sampling(), self.codec, max_reasks=self.params.max_reasks, grammar=self.grammar())
        return policy

    def grammar(self) -> Grammar | None:
        """The answer-first format cut after the answer, `{'value': NAME;`, one reply per name
        (answers.answer_replies), for backends that constrain decoding (llama.cpp, TGI, vLLM),
        when `constrained_decoding` is set. Small models rarely write the format unconstrained
        (docs/running-on-a-laptop.md)."""
        if not self.params.constrained_decoding:
            return None
        return Grammar.choice(answer_replies(self.names))

    def sampling(self) -> Sampling:
        """The parameters' sampling, with `max_tokens` raised under the grammar to what the
        longest reply may take (a token per character at worst): a reply cut before its name
        would name none."""
        sampling, grammar = self.params.sampling(), self.grammar()
        if grammar is None or sampling.max_tokens >= grammar.longest_reply_tokens():
            return sampling
        return dataclasses.replace(sampling, max_tokens=grammar.longest_reply_tokens())

    def fill_consensus(self, model: PopulationModel, name: str) -> None:
        """Every memory holds H successful plays of `name`: a population in consensus."""
        entry = (name, name, self.payoff(name, name))
        for agent in model.population:
            agent.memory.extend([entry] * self.params.memory_length)

    def draw(self, model: PopulationModel, encounter: Encounter) -> tuple[tuple[str, ...] | None, ...]:
        """Each asked agent's option list, in a fresh random order from the run's generator."""
        names, rng = self.names, model.random
        return tuple([None if agent.committed else tuple(rng.sample(names, len(names))) for agent in encounter.agents])

    def start(self, model: PopulationModel, encounter: Encounter) -> tuple[NamingSituation | None, ...]:
        """Each asked agent's view: its options and its memory."""
        return tuple([None if options is None else NamingSituation(options, tuple(agent.memory))
                      for agent, options in zip(encounter.agents, encounter.drawn)])

    def resolve(self, model: PopulationModel, encounter: Encounter,
                decisions: tuple[Decision, Decision]) -> EncounterRecord:
        (first, second), (first_decision, second_decision) = encounter.agents, decisions
        first_name, second_name = first_decision.action, second_decision.action
        first_payoff = self.payoff(first_name, second_name)
        second_payoff = self.payoff(second_name, first_name)
        self.remember(first, first_name, second_name, first_payoff)
        self.remember(second, second_name, first_name, second_payoff)
        return EncounterRecord(
            encounter.t,
            encounter.round,
            int(first_name is not None and first_name == second_name),
            [Move(first.index, first_name, first_payoff, first_decision.fell_back),
             Move(second.index, second_name, second_payoff, second_decision.fell_back)],
            first_decision.calls + second_decision.calls,
        )

    def payoff(self, own: str | None, partner: str | None) -> int:
        """The payoff for playing `own` against `partner`. Prompts are rebuilt from the store
        with it, so keep it a function of the two names."""
        params = self.params
        return params.success_payoff if own is not None and own == partner else params.failure_payoff

    def remember(self, agent: PopulationAgent, own: str | None, partner: str | None, payoff: int) -> None:
        entry = (own, partner, payoff)
        # One object per distinct entry, however many agents remember it (there are about
        # W^2 of them): a million agents' memories are references, not a million tuples.
        entries = self._memory_entries
        agent.memory.append(entries.setdefault(entry, entry) if len(entries) < _MAX_SHARED_ENTRIES else entry)

    @cached_property
    def _memory_entries(self) -> dict[tuple[str | None, str | None, int], tuple[str | None, str | None, int]]:
        return {}

    def prompt_fields(self) -> dict[str, object]:
        """Extra fields a custom template uses, fixed for the whole experiment."""
        return {}

    # --- measuring -----------------------------------------------------------------------
    def new_metrics(self, model: PopulationModel) -> ConventionMetrics:
        return ConventionMetrics(**self.convention_settings(model))

    def convention_settings(self, model: PopulationModel) -> dict[str, Any]:
        """The windows and thresholds of the convention metrics, for subclasses that measure more."""
        params = self.params
        agents = model.population
        size = len(agents)
        committed = frozenset(agent.index for agent in agents if agent.committed)
        return {
            "population": size,
            "committed": committed,
            "alternative": self.committed_name() if committed else None,
            "success_window": params.success_window or size,
            "consensus_window": max(1, round(params.consensus_window * size)),
            "threshold": params.consensus_threshold,
        }

    def stop_reason(self, model: PopulationModel) -> str | None:
        metrics: ConventionMetrics = model.metrics
        stop_at = self.params.stop_at
        if stop_at == "consensus" and metrics.consensus is not None:
            return "consensus"
        if stop_at == "flip" and metrics.flip is not None:
            return "flip"
        return None

    def stop_distance(self, model: PopulationModel, limit: int) -> int | None:
        """From the consensus or flip metrics: every further record the best case for the rule.
        A subclass with a rule of its own (a probe, agreement on a network) and no bound of its
        own gets none."""
        metrics: ConventionMetrics = model.metrics
        if type(self).stop_reason is not NamingGame.stop_reason:
            return None
        if self.params.stop_at == "consensus":
            return metrics.records_to_consensus(limit)
        if self.params.stop_at == "flip":
            return metrics.records_to_flip(limit)
        return limit

    def readout(self) -> NamingReadout:
        return NamingReadout(self)

    def standin_part(self) -> StandInPart:
        templates = [self.template] + [
            PromptTemplate.load("naming", variant) for variant in ("standard", "narrative", "bullet") if variant != self.template.name
        ]
        return StandInPart(rules=[NamingStandIn(templates, self.standin)],
                           ignores=("success_payoff", "failure_payoff", "temperature", "top_k", "top_p", "max_tokens"))


def generate_names(count: int, style: str, seed: int) -> tuple[str, ...]:
    """A pool drawn from the experiment's seed: distinct capital letters, or distinct
    six-character strings of letters and digits (the paper's random-string pools)."""
    rng = random.Random(f"names:{seed}")
    if style == "letters":
        return tuple(rng.sample(string.ascii_uppercase, count))
    alphabet = string.ascii_letters + string.digits
    pool: list[str] = []
    while len(pool) < count:
        name = "".join(rng.choice(alphabet) for _ in range(6))
        if name not in pool:
            pool.append(name)
    return tuple(pool)
