"""What the two-player name games share: the naming game and SIGN are siblings on this base.

Two agents meet, each is asked (by prompt, by commitment or by rule) for a name from a pool, and
the pair's answers are resolved together. The base holds the parameters both read (population,
name pool, memory, payoffs, sampling, who meets whom, stopping) and the hooks that are the same
for both: the pairing and asking the two agents.
Each game adds its own parameters and the hooks that make it that game: what an agent sees
(`draw`, `start`), its prompt codec (`codec`: messages, parsing, reminder, salvage, fallback,
the compact record and its inverse), the outcome (`resolve`) and what is measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Self, TypeVar

from ..agents import ask_together
from ..codec import Situation
from ..llm.base import Sampling
from ..model import PopulationModel
from ..params import Params, require
from ..prompts import PromptTemplate
from ..records import Decision
from ..scenario import Scenario
from ..scheduler import Encounter, Pairing, RoundPairing, SequentialPairing
from ..topology import Topology, TopologyKind


@dataclass(frozen=True, kw_only=True)
class PairwiseParams(Params):
    # population and names
    agents: int = 24
    names: tuple[str, ...] = ()  # the name pool; empty: each game makes its own
    memory_length: int = 5
    success_payoff: int = 100
    failure_payoff: int = -50
    # prompting and sampling
    prompt: str = "standard"  # a built-in template of the game, or a path to a template file
    temperature: float = 0.5
    top_k: int | None = 10
    top_p: float | None = None
    max_tokens: int = 6
    max_reasks: int = 2  # re-asks with a reminder after an unusable reply
    fallback: Literal["random", "previous", "none"] = "random"  # then this, recorded
    # who meets whom
    pairing: Literal["sequential", "network", "rounds"] = "sequential"
    max_in_flight: int = 64  # encounters asked at once (never changes the run); --max-in-flight caps calls
    topology: TopologyKind = "complete"
    topology_degree: int = 4
    topology_probability: float = 0.1
    topology_attachment: int = 2
    graph_file: str = ""
    # measuring and stopping
    max_rounds: int = 50
    consensus_threshold: float = 0.95
    consensus_window: float = 3.0  # in units of N interactions
    success_window: int = 0  # interactions; 0 means N

    def validate(self) -> None:
        require(self.agents >= 2, f"agents must be at least 2 (got {self.agents})")
        require(self.memory_length >= 0, f"memory_length (H) must be >= 0 (got {self.memory_length})")
        if self.names:
            require(len(self.names) >= 2, f"names must hold at least 2 names (got {len(self.names)})")
            require(len(set(self.names)) == len(self.names), "names must be distinct")
            require(all(name.strip() == name and name for name in self.names), "names must be non-empty with no surrounding spaces")
        require(self.max_tokens >= 1, f"max_tokens must be >= 1 (got {self.max_tokens})")
        require(0 <= self.max_reasks <= 100, f"max_reasks must be between 0 and 100 (got {self.max_reasks})")
        require(self.max_in_flight >= 1, f"max_in_flight must be >= 1 (got {self.max_in_flight})")
        require(self.max_rounds >= 1, f"max_rounds must be >= 1 (got {self.max_rounds})")
        require(0 < self.consensus_threshold <= 1, f"consensus_threshold must be in (0, 1] (got {self.consensus_threshold})")
        require(self.consensus_window > 0, f"consensus_window must be > 0 (got {self.consensus_window})")
        require(self.success_window >= 0, f"success_window must be >= 0 (got {self.success_window})")
        require(self.pairing != "sequential" or self.topology == "complete",
                "pairing=sequential draws partners from the whole population; use pairing=network (or rounds) with a topology")
        require(self.pairing != "network" or self.topology != "complete" or "topology" in self.unread,
                "pairing=network pairs agents along a topology's edges, and topology=complete has every edge: that is "
                "pairing=sequential (or rounds); give a graph with it, e.g. --set topology=ring")
        self.sampling()
        topology = self.graph_topology()  # checks its values whatever the family
        if self.topology != "complete" or self.pairing == "network":
            topology.check(self.population_size())

    def population_size(self) -> int:
        return self.agents

    def graph_topology(self) -> Topology:
        return Topology(kind=self.topology, degree=self.topology_degree, probability=self.topology_probability,
                        attachment=self.topology_attachment, path=self.graph_file)

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p, max_tokens=self.max_tokens)


P = TypeVar("P", bound=PairwiseParams)
S = TypeVar("S", bound=Situation)


class PairwiseGame(Scenario[P, S, None]):
    """Base of the two-player name games; see the module's docstring for what a game adds."""

    @property
    def names(self) -> tuple[str, ...]:
        if not self.params.names:
            raise RuntimeError("the name pool is made by for_experiment(seed); call it before running")
        return self.params.names

    @cached_property
    def template(self) -> PromptTemplate:
        """The prompt template the parameters name (a game loads its own built-in ones)."""
        raise NotImplementedError

    def with_recorded_templates(self, templates: Mapping[str, str]) -> Self:
        """This game with its template's text as an experiment recorded it (`templates`: name ->
        text, the store's `prompt_templates`), so that prompts rebuilt from the store are the
        prompts that were sent even after the template files changed; itself when nothing is
        recorded under its template's name."""
        template = self.template
        text = templates.get(template.name)
        if text is None or text == template.text:
            return self
        game = type(self)(self.params, standin=self.standin)
        game.__dict__["template"] = PromptTemplate.parse(template.name, text)  # the cached property's value
        return game

    def pairing(self, model: PopulationModel) -> Pairing:
        params = self.params
        graph = None
        if params.topology != "complete" or params.pairing == "network":
            graph = params.graph_topology().neighbour_lists(len(model.population), model.random.getrandbits(32))
        if params.pairing == "rounds":
            return RoundPairing(graph)
        return SequentialPairing(params.max_in_flight, graph)

    async def play(self, model: PopulationModel, encounter: Encounter) -> tuple[Decision, Decision]:
        first, second = encounter.agents
        if first.policy.immediate and second.policy.immediate:  # `ask_together`'s own shortcut, inlined: the hot path
            views = encounter.views
            return await first.astep(views[0]), await second.astep(views[1])
        first_decision, second_decision = await ask_together(encounter.agents, encounter.views)
        return first_decision, second_decision


def name_codes(names: tuple[str, ...]) -> dict[str, str]:
    """One character per pool index for the store: ASCII '0'..'z' for the first 75 names, then beyond."""
    return {name: chr(48 + index) if index < 75 else chr(256 + index) for index, name in enumerate(names)}
